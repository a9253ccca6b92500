//! A Java keystore (`cacerts`) through `keytool`.

use std::path::{Path, PathBuf};

use crate::cert::CaCert;
use crate::error::{Result, TrustError};
use crate::run::{run_ok, Runner};
use crate::step::{java_cert, keytool_cmd, Step};
use crate::target::{listed_by_name, Backups, Listed, Plan, Target, TargetKind, NAME_PREFIX};

/// One keystore.
#[derive(Debug, Clone)]
pub struct JavaKeystore {
    /// The keystore file.
    pub keystore: PathBuf,
    /// keytool.
    pub keytool: PathBuf,
}

impl JavaKeystore {
    /// The keystore to use: `given`; else under a root tree `etc/ssl/certs/java/cacerts`
    /// if it exists; else, on this machine, `$JAVA_HOME/lib/security/cacerts` or the one
    /// of the JDK whose keytool is on PATH. `None`: no JDK (or no keystore) found.
    pub fn detect(
        given: Option<&Path>,
        root: Option<&Path>,
        keytool: PathBuf,
    ) -> Result<Option<Self>> {
        let found = match (given, root) {
            (Some(g), _) => {
                if !g.is_file() {
                    return Err(TrustError::TargetMissing {
                        target: "java",
                        reason: format!("{} is not a keystore file", g.display()),
                    });
                }
                Some(g.to_path_buf())
            }
            (None, Some(r)) => Some(r.join("etc/ssl/certs/java/cacerts")).filter(|p| p.is_file()),
            (None, None) => {
                let from_home = std::env::var_os("JAVA_HOME")
                    .map(|h| PathBuf::from(h).join("lib/security/cacerts"));
                // bin/keytool -> ../lib/security/cacerts, symlinks (alternatives) resolved.
                let from_tool = std::fs::canonicalize(&keytool).ok().and_then(|k| {
                    k.parent()?
                        .parent()
                        .map(|jdk| jdk.join("lib/security/cacerts"))
                });
                from_home
                    .into_iter()
                    .chain(from_tool)
                    .find(|p| p.is_file())
                    // Debian links the JDK's cacerts to /etc/ssl/certs/java/cacerts:
                    // change the file, not the link.
                    .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
            }
        };
        Ok(found.map(|keystore| JavaKeystore { keystore, keytool }))
    }

    fn alias(ca: &CaCert) -> String {
        format!("{NAME_PREFIX}{}", ca.id())
    }
}

/// The aliases of trusted certificates in `keytool -list` output
/// (`alias, date, trustedCertEntry,`).
fn aliases(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter(|l| l.contains("trustedCertEntry"))
        .filter_map(|l| l.split(',').next().map(|a| a.trim().to_string()))
        .collect()
}

impl Target for JavaKeystore {
    fn kind(&self) -> TargetKind {
        TargetKind::Java
    }

    fn location(&self) -> String {
        self.keystore.display().to_string()
    }

    fn plan(&self, ca: &CaCert, runner: &dyn Runner, backups: &mut Backups) -> Result<Plan> {
        let mut plan = Plan::default();
        let alias = Self::alias(ca);
        match java_cert(runner, &self.keytool, &self.keystore, &alias)? {
            Some(der) if der == ca.der => {
                plan.notes.push(format!(
                    "{} already holds this CA as {alias}: left as it is",
                    self.keystore.display()
                ));
                return Ok(plan);
            }
            Some(_) => {
                return Err(TrustError::Command {
                    program: self.keytool.display().to_string(),
                    reason: format!(
                        "{} holds another certificate named {alias}",
                        self.keystore.display()
                    ),
                })
            }
            None => {}
        }
        if let Some((step, _)) = backups.step(&self.keystore) {
            plan.steps.push(step);
        }
        plan.steps.push(Step::JavaAdd {
            keytool: self.keytool.clone(),
            keystore: self.keystore.clone(),
            alias,
        });
        Ok(plan)
    }

    fn list(&self, runner: &dyn Runner) -> Result<Vec<Listed>> {
        let out = run_ok(
            runner,
            &keytool_cmd(&self.keytool, &self.keystore, &["-list"]),
        )?;
        listed_by_name(
            TargetKind::Java,
            &self.location(),
            aliases(&out.stdout),
            |alias| java_cert(runner, &self.keytool, &self.keystore, alias),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn aliases_from_a_keytool_listing() {
        let listing =
            "Keystore type: PKCS12\nKeystore provider: SUN\n\nYour keystore contains 2 entries\n\n\
                       tlskit-0123456789abcdef, Nov 27, 2026, trustedCertEntry, \n\
                       Certificate fingerprint (SHA-256): AB:CD\n\
                       debian:foo.pem, Nov 27, 2026, trustedCertEntry, \n";
        assert_eq!(
            super::aliases(listing),
            vec!["tlskit-0123456789abcdef", "debian:foo.pem"]
        );
    }
}
