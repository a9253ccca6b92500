//! The operating system's store: Debian-like (`/usr/local/share/ca-certificates` and
//! `update-ca-certificates`) and Fedora-like (`/etc/pki/ca-trust/source/anchors` and
//! `update-ca-trust`), on this machine or in a root tree.

use std::path::{Path, PathBuf};

use crate::cert::{pem_certs, CaCert};
use crate::error::{Result, TrustError};
use crate::run::{find_program, Runner};
use crate::step::{Step, Tool};
use crate::target::{
    facts, file_holds, make_dirs, Backups, Listed, Plan, Target, TargetKind, NAME_PREFIX,
};

/// The two layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Debian, Ubuntu and kin.
    Debian,
    /// Fedora, RHEL and kin.
    Fedora,
}

impl Layout {
    /// Its name in words.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Debian => "Debian",
            Layout::Fedora => "Fedora",
        }
    }

    /// The directory of locally added anchors, relative to the root.
    pub fn anchor_dir(self) -> &'static str {
        match self {
            Layout::Debian => "usr/local/share/ca-certificates",
            Layout::Fedora => "etc/pki/ca-trust/source/anchors",
        }
    }

    /// The PEM bundle TLS clients read, relative to the root.
    pub fn bundle(self) -> &'static str {
        match self {
            Layout::Debian => "etc/ssl/certs/ca-certificates.crt",
            Layout::Fedora => "etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
        }
    }

    /// The file name extension the layout's tool picks up (Debian's only takes `.crt`).
    fn extension(self) -> &'static str {
        match self {
            Layout::Debian => "crt",
            Layout::Fedora => "pem",
        }
    }

    /// The tool's name.
    fn tool_name(self) -> &'static str {
        match self {
            Layout::Debian => "update-ca-certificates",
            Layout::Fedora => "update-ca-trust",
        }
    }
}

/// One system store.
#[derive(Debug, Clone)]
pub struct SystemStore {
    /// Its layout.
    pub layout: Layout,
    /// The root tree (`None`: this machine's `/`).
    pub root: Option<PathBuf>,
    /// The tool found on this machine.
    pub tool: Option<PathBuf>,
}

impl SystemStore {
    /// The layouts present under `root` (or on this machine). Under a root tree a layout is
    /// present when its anchor directory exists (both may be: tests lay out both in one
    /// tree); on this machine, when its tool is installed too.
    pub fn detect(root: Option<&Path>) -> Vec<SystemStore> {
        let mut found = Vec::new();
        for layout in [Layout::Debian, Layout::Fedora] {
            let tool = find_program(layout.tool_name());
            let s = SystemStore {
                layout,
                root: root.map(Path::to_path_buf),
                tool,
            };
            let dir_there = s.path(layout.anchor_dir()).is_dir();
            let present = match (&s.root, layout) {
                (Some(_), _) => dir_there,
                (None, _) => dir_there && s.tool.is_some(),
            };
            if present {
                found.push(s);
            }
        }
        found
    }

    /// `rel` under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.as_deref().unwrap_or(Path::new("/")).join(rel)
    }

    /// Where `ca` goes.
    pub fn anchor_file(&self, ca: &CaCert) -> PathBuf {
        self.path(self.layout.anchor_dir()).join(format!(
            "{NAME_PREFIX}{}.{}",
            ca.id(),
            self.layout.extension()
        ))
    }

    fn tool(&self) -> Result<Tool> {
        let program = self.tool.clone().ok_or_else(|| TrustError::TargetMissing {
            target: "system",
            reason: format!("{} is not installed", self.layout.tool_name()),
        })?;
        Ok(match self.layout {
            Layout::Debian => Tool::UpdateCaCertificates {
                program,
                root: self.root.clone(),
            },
            Layout::Fedora => Tool::UpdateCaTrust { program },
        })
    }
}

impl SystemStore {
    /// On this machine's Debian store with ca-certificates-java's hook: the alias the hook
    /// will give the CA in the system's Java keystore, to delete on uninstall.
    fn java_hook(&self, ca: &CaCert) -> Option<Step> {
        if self.layout != Layout::Debian || self.root.is_some() {
            return None;
        }
        let keystore = self.path("etc/ssl/certs/java/cacerts");
        let hook = self.path("etc/ca-certificates/update.d/jks-keystore");
        if !hook.is_file() || !keystore.is_file() {
            return None;
        }
        Some(Step::HookJavaAlias {
            keytool: find_program("keytool")?,
            keystore,
            alias: format!("debian:{NAME_PREFIX}{}.pem", ca.id()),
        })
    }
}

impl Target for SystemStore {
    fn kind(&self) -> TargetKind {
        TargetKind::System
    }

    fn location(&self) -> String {
        match &self.root {
            Some(r) => format!("{} layout under {}", self.layout.name(), r.display()),
            None => format!("{} layout", self.layout.name()),
        }
    }

    fn plan(&self, ca: &CaCert, _runner: &dyn Runner, backups: &mut Backups) -> Result<Plan> {
        let mut plan = Plan::default();
        let anchor = self.anchor_file(ca);
        if std::fs::symlink_metadata(&anchor).is_ok() {
            if file_holds(&anchor, &ca.der) {
                plan.notes.push(format!(
                    "{} already holds this CA: left as it is",
                    anchor.display()
                ));
                return Ok(plan);
            }
            return Err(TrustError::io(
                &anchor,
                "exists and does not hold this CA",
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        let bundle = self.path(self.layout.bundle());
        let generated = self.layout == Layout::Fedora && self.root.is_some();
        if generated {
            // update-ca-trust has no root-tree option: write what its PEM extraction
            // would hold for this CA, and say so.
            plan.steps.push(Step::PutFile { path: anchor });
            if let Some(parent) = bundle.parent() {
                plan.steps.extend(make_dirs(parent));
            }
            let copy = backups.step(&bundle).map(|(step, copy)| {
                plan.steps.push(step);
                copy
            });
            plan.steps.push(Step::AppendBundle {
                path: bundle.clone(),
                copy,
            });
            plan.notes.push(format!(
                "update-ca-trust cannot work on a root tree: tlskit appends the CA to {} \
                 itself (the PEM bundle OpenSSL, GnuTLS and curl read on Fedora); the \
                 other extracted formats (OpenSSL trust bundle, Java, EDK2) are not written",
                bundle.display()
            ));
            return Ok(plan);
        }
        let tool = self.tool()?;
        if let Some(step) = self.java_hook(ca) {
            plan.steps.push(step);
        }
        if let Some(parent) = bundle.parent() {
            plan.steps.extend(make_dirs(parent));
        }
        let copy = backups.step(&bundle).map(|(step, copy)| {
            plan.steps.push(step);
            copy
        });
        plan.steps.push(Step::Refresh {
            tool: tool.clone(),
            bundle,
            copy,
        });
        plan.steps
            .extend(make_dirs(&self.path(self.layout.anchor_dir())));
        plan.steps.push(Step::PutFile { path: anchor });
        plan.steps.push(Step::Run { tool });
        if self.root.is_some() {
            plan.notes.push(
                "the tree's update hooks (etc/ca-certificates/update.d) are not run: they \
                 belong to the tree, not to this machine"
                    .into(),
            );
        }
        Ok(plan)
    }

    fn list(&self, _runner: &dyn Runner) -> Result<Vec<Listed>> {
        let dir = self.path(self.layout.anchor_dir());
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut names: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(NAME_PREFIX))
            })
            .collect();
        names.sort();
        let bundle = tlskit_io::read(
            &self.path(self.layout.bundle()),
            crate::step::MAX_STORE_FILE_BYTES,
        )
        .map(|b| pem_certs(&b))
        .unwrap_or_default();
        Ok(names
            .into_iter()
            .map(|p| {
                let der = tlskit_io::read(&p, crate::cert::MAX_CA_FILE_BYTES)
                    .ok()
                    .and_then(|b| pem_certs(&b).into_iter().next());
                let (subject, sha256) = der.as_deref().map_or((None, None), facts);
                Listed {
                    target: TargetKind::System,
                    location: self.location(),
                    name: p.display().to_string(),
                    subject,
                    sha256,
                    in_bundle: Some(der.is_some_and(|d| bundle.contains(&d))),
                }
            })
            .collect())
    }
}
