//! NSS databases (`sql:` format): the one Chromium reads on Linux (`~/.pki/nssdb`) and each
//! Firefox profile's, through `certutil` from libnss3-tools.

use std::path::{Path, PathBuf};

use crate::cert::CaCert;
use crate::error::{Result, TrustError};
use crate::run::{run_ok, Cmd, Runner};
use crate::step::{nss_cert, Step};
use crate::target::{listed_by_name, Backups, Listed, Plan, Target, TargetKind, NAME_PREFIX};

/// The files of an `sql:` database that an add changes (copied first).
const DB_FILES: [&str; 3] = ["cert9.db", "key4.db", "pkcs11.txt"];

/// One NSS database.
#[derive(Debug, Clone)]
pub struct NssDb {
    /// Its directory.
    pub db: PathBuf,
    /// certutil.
    pub certutil: PathBuf,
    /// Whose it is, in words (`Chromium`, `Firefox profile abc.default`, `given`).
    pub owner: String,
}

impl NssDb {
    /// The databases to use: those `given` (each must hold a cert9.db), else, with a
    /// `home`, `~/.pki/nssdb` and every Firefox profile that has a cert9.db (the old
    /// cert8.db format is not written).
    pub fn detect(given: &[PathBuf], home: Option<&Path>, certutil: PathBuf) -> Result<Vec<NssDb>> {
        let mut out = Vec::new();
        for g in given {
            if !g.join("cert9.db").is_file() {
                return Err(TrustError::TargetMissing {
                    target: "nss",
                    reason: format!(
                        "{} holds no cert9.db (create an empty database with certutil -N \
                         --empty-password -d sql:DIR)",
                        g.display()
                    ),
                });
            }
            out.push(NssDb {
                db: g.clone(),
                certutil: certutil.clone(),
                owner: "given".into(),
            });
        }
        let Some(home) = home.filter(|_| given.is_empty()) else {
            return Ok(out);
        };
        let chromium = home.join(".pki/nssdb");
        if chromium.join("cert9.db").is_file() {
            out.push(NssDb {
                db: chromium,
                certutil: certutil.clone(),
                owner: "Chromium".into(),
            });
        }
        for profiles in [
            home.join(".mozilla/firefox"),
            home.join("snap/firefox/common/.mozilla/firefox"),
        ] {
            let Ok(rd) = std::fs::read_dir(&profiles) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("cert9.db").is_file())
                .collect();
            dirs.sort();
            for d in dirs {
                let name = d
                    .file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned());
                out.push(NssDb {
                    db: d,
                    certutil: certutil.clone(),
                    owner: format!("Firefox profile {name}"),
                });
            }
        }
        Ok(out)
    }

    fn nickname(ca: &CaCert) -> String {
        format!("{NAME_PREFIX}{}", ca.id())
    }
}

/// The nicknames in `certutil -L` output (the trust flags are the last column).
fn nicknames(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|l| {
            let l = l.trim_end();
            let (nick, flags) = l.rsplit_once(char::is_whitespace)?;
            // Trust flags look like `C,,` or `CT,C,C`: two commas.
            (flags.matches(',').count() == 2).then(|| nick.trim().to_string())
        })
        .filter(|n| !n.is_empty())
        .collect()
}

impl Target for NssDb {
    fn kind(&self) -> TargetKind {
        TargetKind::Nss
    }

    fn location(&self) -> String {
        format!("{} ({})", self.db.display(), self.owner)
    }

    fn plan(&self, ca: &CaCert, runner: &dyn Runner, backups: &mut Backups) -> Result<Plan> {
        let mut plan = Plan::default();
        let nickname = Self::nickname(ca);
        match nss_cert(runner, &self.certutil, &self.db, &nickname)? {
            Some(der) if der == ca.der => {
                plan.notes.push(format!(
                    "{} already holds this CA as {nickname}: left as it is",
                    self.db.display()
                ));
                return Ok(plan);
            }
            Some(_) => {
                return Err(TrustError::Command {
                    program: self.certutil.display().to_string(),
                    reason: format!(
                        "{} holds another certificate named {nickname}",
                        self.db.display()
                    ),
                })
            }
            None => {}
        }
        for f in DB_FILES {
            if let Some((step, _)) = backups.step(&self.db.join(f)) {
                plan.steps.push(step);
            }
        }
        plan.steps.push(Step::NssAdd {
            certutil: self.certutil.clone(),
            db: self.db.clone(),
            nickname,
        });
        Ok(plan)
    }

    fn list(&self, runner: &dyn Runner) -> Result<Vec<Listed>> {
        let mut db = std::ffi::OsString::from("sql:");
        db.push(&self.db);
        let out = run_ok(
            runner,
            &Cmd::new(&self.certutil, vec!["-L".into(), "-d".into(), db]),
        )?;
        listed_by_name(
            TargetKind::Nss,
            &self.location(),
            nicknames(&out.stdout),
            |nick| nss_cert(runner, &self.certutil, &self.db, nick),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nicknames_from_a_certutil_listing() {
        let listing =
            "\nCertificate Nickname                                         Trust Attributes\n\
                       SSL,S/MIME,JAR/XPI\n\n\
                       tlskit-0123456789abcdef                                      C,,\n\
                       My Corp Root CA                                              CT,C,C\n";
        assert_eq!(
            super::nicknames(listing),
            vec!["tlskit-0123456789abcdef", "My Corp Root CA"]
        );
    }
}
