//! One reversible change: what it does, how it is undone, and the sentence that says so.
//! Steps are plain data (written to the journal before they run), so an undo needs
//! nothing but the journal: not the targets found now, not the options given now.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cert::{pem_certs, CaCert};
use crate::error::{Result, TrustError};
use crate::run::{run_ok, Cmd, Runner};

/// Largest bundle, keystore or database file read back (a system bundle is under 1 MiB).
pub const MAX_STORE_FILE_BYTES: u64 = tlskit_io::MAX_INPUT_BYTES;

/// Environment variable keytool reads its store password from (`-storepass:env`): the
/// password never appears on a command line. Its value comes from the user's
/// `TLSKIT_JAVA_STOREPASS`, else Java's default `changeit`.
pub const STOREPASS_ENV: &str = "TLSKIT_TRUST_STOREPASS";

/// The tool that regenerates a system store from its anchor directories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "tool", rename_all = "kebab-case")]
pub enum Tool {
    /// Debian's `update-ca-certificates`; with `root`, every directory it uses points into
    /// the root tree and hooks are not run (they belong to the tree, not to this machine).
    UpdateCaCertificates {
        /// The script run (this machine's).
        program: PathBuf,
        /// The root tree, if any.
        root: Option<PathBuf>,
    },
    /// Fedora's `update-ca-trust extract` (never with a root tree: it has no such option).
    UpdateCaTrust {
        /// The script run.
        program: PathBuf,
    },
}

impl Tool {
    fn command(&self, fresh: bool) -> Cmd {
        match self {
            Tool::UpdateCaCertificates { program, root } => {
                let mut args: Vec<std::ffi::OsString> = Vec::new();
                if fresh {
                    // Without --fresh the script never removes the link of a certificate
                    // whose file is gone (Debian's own advice after removing one).
                    args.push("--fresh".into());
                }
                if let Some(r) = root {
                    let conf = r.join("etc/ca-certificates.conf");
                    // A tree without the configuration file: an empty one (the script
                    // reads it with sed, which fails on a missing file).
                    let conf = if conf.is_file() {
                        conf
                    } else {
                        PathBuf::from("/dev/null")
                    };
                    for (flag, path) in [
                        ("--certsconf", conf),
                        ("--certsdir", r.join("usr/share/ca-certificates")),
                        ("--localcertsdir", r.join("usr/local/share/ca-certificates")),
                        ("--etccertsdir", r.join("etc/ssl/certs")),
                        // Not a directory: the tree's hooks are not run on this machine.
                        ("--hooksdir", PathBuf::from("/dev/null")),
                    ] {
                        args.push(flag.into());
                        args.push(path.into_os_string());
                    }
                }
                Cmd::new(program, args)
            }
            Tool::UpdateCaTrust { program } => Cmd::new(program, ["extract"]),
        }
    }
}

/// One change to a trust store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum Step {
    /// Create a directory that did not exist. Undo: remove it if it is empty.
    MakeDir {
        /// The directory.
        path: PathBuf,
    },
    /// Copy a file before anything changes it. Undo: nothing (the copy serves the others).
    Backup {
        /// The file.
        path: PathBuf,
        /// Where the copy goes (in the journal's backup directory).
        copy: PathBuf,
    },
    /// Write the CA as a new PEM file. Undo: remove it (moved to the backups if it changed
    /// since).
    PutFile {
        /// The new file.
        path: PathBuf,
    },
    /// Append the CA to a PEM bundle (created if absent). Undo: the previous bundle back.
    AppendBundle {
        /// The bundle.
        path: PathBuf,
        /// Its copy from before (a [`Step::Backup`] earlier), `None` if it did not exist.
        copy: Option<PathBuf>,
    },
    /// Marks the point before the anchor files change: nothing to do. Undo, once the
    /// anchors are back as they were: run the tool again, then make sure `bundle` no
    /// longer holds the CA (the previous copy back if the tool left it there).
    Refresh {
        /// The tool.
        tool: Tool,
        /// The bundle it writes.
        bundle: PathBuf,
        /// The bundle's copy from before, `None` if it did not exist.
        copy: Option<PathBuf>,
    },
    /// Run the tool that regenerates the system store. Undo: nothing (see `Refresh`).
    Run {
        /// The tool.
        tool: Tool,
    },
    /// Add the CA to an NSS database, trusted to issue TLS server certificates (`C,,`).
    /// Undo: delete that nickname, if it still holds this CA.
    NssAdd {
        /// certutil.
        certutil: PathBuf,
        /// The database directory (`sql:` format).
        db: PathBuf,
        /// The nickname given.
        nickname: String,
    },
    /// Debian's jks-keystore hook of update-ca-certificates imports a new anchor into the
    /// system's Java keystore as `debian:FILE.pem`, and `--fresh` never tells it to remove
    /// one: nothing to do here (the hook adds it). Undo: delete that alias, if it holds
    /// this CA.
    HookJavaAlias {
        /// keytool.
        keytool: PathBuf,
        /// The keystore the hook writes.
        keystore: PathBuf,
        /// The alias the hook gives.
        alias: String,
    },
    /// Import the CA into a Java keystore as a trusted certificate. Undo: delete that
    /// alias, if it still holds this CA.
    JavaAdd {
        /// keytool.
        keytool: PathBuf,
        /// The keystore file.
        keystore: PathBuf,
        /// The alias given.
        alias: String,
    },
}

/// What a step needs to run or be undone.
pub struct Ctx<'a> {
    /// Runs the external commands.
    pub runner: &'a dyn Runner,
    /// The CA.
    pub ca: &'a CaCert,
    /// The journal's backup directory (created on first use).
    pub backups: &'a Path,
}

fn shown(p: &Path) -> String {
    tlskit_x509::text::escape(&p.display().to_string()).into_owned()
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

fn read_if_present(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TrustError::io(path, "cannot look at it", e)),
        Ok(_) => Ok(Some(tlskit_io::read(path, MAX_STORE_FILE_BYTES)?)),
    }
}

/// Move `path` into the backup directory under `tag-NAME` (never a plain delete of a
/// file whose content tlskit did not write).
fn move_aside(path: &Path, backups: &Path, tag: &str) -> Result<PathBuf> {
    make_backup_dir(backups)?;
    let name = path
        .file_name()
        .map_or("file".into(), |n| n.to_string_lossy().into_owned());
    let mut dest = backups.join(format!("{tag}-{name}"));
    let mut n = 1;
    while dest.exists() {
        n += 1;
        dest = backups.join(format!("{tag}{n}-{name}"));
    }
    std::fs::rename(path, &dest).map_err(|e| TrustError::io(path, "cannot move it aside", e))?;
    Ok(dest)
}

fn make_backup_dir(backups: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if backups.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(backups)
        .map_err(|e| TrustError::io(backups, "cannot create the backup directory", e))
}

/// A CA as a temporary PEM file, for the commands that read it from a file.
fn temp_pem(ca: &CaCert) -> Result<tempfile::NamedTempFile> {
    use std::io::Write;
    let mut f = tempfile::Builder::new()
        .prefix("tlskit-trust-")
        .suffix(".pem")
        .tempfile()
        .map_err(|e| TrustError::io(std::env::temp_dir(), "cannot create a temporary file", e))?;
    f.write_all(ca.pem.as_bytes())
        .map_err(|e| TrustError::io(f.path().to_path_buf(), "cannot write", e))?;
    Ok(f)
}

fn storepass() -> String {
    std::env::var("TLSKIT_JAVA_STOREPASS").unwrap_or_else(|_| "changeit".into())
}

/// The DER of the certificate under `nickname` in the NSS database `db`, `None` when the
/// nickname is not there.
pub(crate) fn nss_cert(
    runner: &dyn Runner,
    certutil: &Path,
    db: &Path,
    nickname: &str,
) -> Result<Option<Vec<u8>>> {
    let mut dbarg = std::ffi::OsString::from("sql:");
    dbarg.push(db);
    let cmd = Cmd::new(
        certutil,
        vec![
            "-L".into(),
            "-d".into(),
            dbarg,
            "-n".into(),
            nickname.into(),
            "-a".into(),
        ],
    );
    let out = runner.run(&cmd)?;
    if !out.success {
        return Ok(None);
    }
    Ok(pem_certs(out.stdout.as_bytes()).into_iter().next())
}

/// The DER of the certificate under `alias` in a Java keystore, `None` when absent.
pub(crate) fn java_cert(
    runner: &dyn Runner,
    keytool: &Path,
    keystore: &Path,
    alias: &str,
) -> Result<Option<Vec<u8>>> {
    let mut cmd = Cmd::new(
        keytool,
        vec![
            "-exportcert".into(),
            "-rfc".into(),
            "-alias".into(),
            alias.into(),
            "-keystore".into(),
            keystore.as_os_str().to_owned(),
            "-storepass:env".into(),
            STOREPASS_ENV.into(),
        ],
    );
    cmd.env.push((STOREPASS_ENV.into(), storepass()));
    let out = runner.run(&cmd)?;
    if !out.success {
        return Ok(None);
    }
    Ok(pem_certs(out.stdout.as_bytes()).into_iter().next())
}

/// A keytool command on `keystore` with the store password from the environment.
pub(crate) fn keytool_cmd(keytool: &Path, keystore: &Path, args: &[&str]) -> Cmd {
    let mut all: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    all.push("-keystore".into());
    all.push(keystore.as_os_str().to_owned());
    all.push("-storepass:env".into());
    all.push(STOREPASS_ENV.into());
    let mut cmd = Cmd::new(keytool, all);
    cmd.env.push((STOREPASS_ENV.into(), storepass()));
    cmd
}

fn nss_db_arg(db: &Path) -> std::ffi::OsString {
    let mut a = std::ffi::OsString::from("sql:");
    a.push(db);
    a
}

impl Step {
    /// What the step does, as a sentence for people (paths escaped).
    pub fn describe(&self) -> String {
        match self {
            Step::MakeDir { path } => format!("create the directory {}", shown(path)),
            Step::Backup { path, copy } => {
                format!("copy {} to {} (backup)", shown(path), shown(copy))
            }
            Step::PutFile { path } => format!("write the CA to {}", shown(path)),
            Step::AppendBundle { path, .. } => {
                format!("append the CA to the bundle {}", shown(path))
            }
            Step::Refresh { bundle, .. } => format!(
                "(on uninstall: regenerate {} once the CA's file is gone)",
                shown(bundle)
            ),
            Step::Run { tool } => format!("run {}", tool.command(false).display()),
            Step::HookJavaAlias {
                keystore, alias, ..
            } => format!(
                "(update-ca-certificates' Java hook adds the CA to {} as {})",
                shown(keystore),
                tlskit_x509::text::escape(alias)
            ),
            Step::NssAdd { db, nickname, .. } => format!(
                "add the CA to the NSS database {} as {} (trusted for TLS servers: C,,)",
                shown(db),
                tlskit_x509::text::escape(nickname)
            ),
            Step::JavaAdd {
                keystore, alias, ..
            } => format!(
                "import the CA into the Java keystore {} as {}",
                shown(keystore),
                tlskit_x509::text::escape(alias)
            ),
        }
    }

    /// What undoing the step does, as a sentence (`None`: nothing to undo).
    pub fn describe_undo(&self) -> Option<String> {
        match self {
            Step::MakeDir { path } => Some(format!(
                "remove the directory {} if it is empty",
                shown(path)
            )),
            Step::Backup { .. } | Step::Run { .. } => None,
            Step::PutFile { path } => Some(format!("remove {}", shown(path))),
            Step::AppendBundle { path, copy } => Some(match copy {
                Some(c) => format!("put back {} from {}", shown(path), shown(c)),
                None => format!("remove the bundle {} (it did not exist)", shown(path)),
            }),
            Step::Refresh { tool, .. } => Some(format!("run {}", tool.command(true).display())),
            Step::NssAdd { db, nickname, .. } => Some(format!(
                "delete {} from the NSS database {}",
                tlskit_x509::text::escape(nickname),
                shown(db)
            )),
            Step::JavaAdd {
                keystore, alias, ..
            }
            | Step::HookJavaAlias {
                keystore, alias, ..
            } => Some(format!(
                "delete {} from the Java keystore {}",
                tlskit_x509::text::escape(alias),
                shown(keystore)
            )),
        }
    }

    /// Make the change.
    pub fn apply(&self, cx: &Ctx<'_>) -> Result<()> {
        match self {
            Step::MakeDir { path } => std::fs::create_dir(path)
                .map_err(|e| TrustError::io(path, "cannot create the directory", e)),
            Step::Backup { path, copy } => {
                make_backup_dir(cx.backups)?;
                // Read as any other input (a regular file, opened without blocking, at
                // most MAX_STORE_FILE_BYTES): a FIFO or a link to a device in a root tree
                // is refused, not copied for ever. The copy is private (an NSS key4.db).
                let bytes = tlskit_io::read(path, MAX_STORE_FILE_BYTES)?;
                tlskit_io::replace(copy, &[&bytes], true)?;
                Ok(())
            }
            Step::PutFile { path } => {
                tlskit_io::write_atomic(path, cx.ca.pem.as_bytes(), false, false)?;
                Ok(())
            }
            Step::AppendBundle { path, .. } => {
                let old = read_if_present(path)?.unwrap_or_default();
                let sep: &[u8] = if old.is_empty() || old.ends_with(b"\n") {
                    b""
                } else {
                    b"\n"
                };
                tlskit_io::replace(path, &[&old, sep, cx.ca.pem.as_bytes()], false)?;
                Ok(())
            }
            Step::Refresh { .. } | Step::HookJavaAlias { .. } => Ok(()),
            Step::Run { tool } => run_ok(cx.runner, &tool.command(false)).map(drop),
            Step::NssAdd {
                certutil,
                db,
                nickname,
            } => {
                let pem = temp_pem(cx.ca)?;
                let cmd = Cmd::new(
                    certutil,
                    vec![
                        "-A".into(),
                        "-d".into(),
                        nss_db_arg(db),
                        "-n".into(),
                        nickname.into(),
                        "-t".into(),
                        "C,,".into(),
                        "-i".into(),
                        pem.path().as_os_str().to_owned(),
                    ],
                );
                run_ok(cx.runner, &cmd).map(drop)
            }
            Step::JavaAdd {
                keytool,
                keystore,
                alias,
            } => {
                let pem = temp_pem(cx.ca)?;
                let file = pem.path().display().to_string();
                let cmd = keytool_cmd(
                    keytool,
                    keystore,
                    &[
                        "-importcert",
                        "-noprompt",
                        "-trustcacerts",
                        "-alias",
                        alias,
                        "-file",
                        &file,
                    ],
                );
                run_ok(cx.runner, &cmd).map(drop)
            }
        }
    }

    /// Undo the change. Idempotent: a step that never ran (the journal says it started,
    /// then the process died) undoes to nothing. Returns a note when the undo left
    /// something as it found it on purpose (a directory that is not empty).
    pub fn undo(&self, cx: &Ctx<'_>) -> Result<Option<String>> {
        match self {
            Step::MakeDir { path } => match std::fs::remove_dir(path) {
                Ok(()) => Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(_) if path.is_dir() => Ok(Some(format!(
                    "{} was created by the install and is kept: it is not empty",
                    shown(path)
                ))),
                Err(e) => Err(TrustError::io(path, "cannot remove the directory", e)),
            },
            Step::Backup { .. } | Step::Run { .. } => Ok(None),
            Step::PutFile { path } => {
                let Some(cur) = read_if_present(path)? else {
                    return Ok(None);
                };
                if sha256(&cur) == sha256(cx.ca.pem.as_bytes()) {
                    std::fs::remove_file(path)
                        .map_err(|e| TrustError::io(path, "cannot remove", e))?;
                    Ok(None)
                } else {
                    let to = move_aside(path, cx.backups, "changed")?;
                    Ok(Some(format!(
                        "{} had changed since the install: moved to {}",
                        shown(path),
                        shown(&to)
                    )))
                }
            }
            Step::AppendBundle { path, copy } => undo_append(path, copy.as_deref(), cx),
            Step::Refresh { tool, bundle, copy } => {
                run_ok(cx.runner, &tool.command(true))?;
                let Some(cur) = read_if_present(bundle)? else {
                    return Ok(None);
                };
                if !pem_certs(&cur).contains(&cx.ca.der) {
                    return Ok(None);
                }
                // The tool did not rewrite the bundle (it does not when no certificate is
                // left): the bundle from before, or none.
                match copy {
                    Some(c) => {
                        let before = tlskit_io::read(c, MAX_STORE_FILE_BYTES)?;
                        tlskit_io::replace(bundle, &[&before], false)?;
                        Ok(None)
                    }
                    None => {
                        let to = move_aside(bundle, cx.backups, "generated")?;
                        Ok(Some(format!(
                            "{} still held the CA after the tool ran: moved to {}",
                            shown(bundle),
                            shown(&to)
                        )))
                    }
                }
            }
            Step::NssAdd {
                certutil,
                db,
                nickname,
            } => {
                match nss_cert(cx.runner, certutil, db, nickname)? {
                    None => return Ok(None),
                    Some(der) if der != cx.ca.der => {
                        return Err(TrustError::Command {
                            program: shown(certutil),
                            reason: format!(
                                "{} in {} is not this CA any more; left as it is",
                                tlskit_x509::text::escape(nickname),
                                shown(db)
                            ),
                        })
                    }
                    Some(_) => {}
                }
                let cmd = Cmd::new(
                    certutil,
                    vec![
                        "-D".into(),
                        "-d".into(),
                        nss_db_arg(db),
                        "-n".into(),
                        nickname.into(),
                    ],
                );
                run_ok(cx.runner, &cmd).map(|_| None)
            }
            Step::JavaAdd {
                keytool,
                keystore,
                alias,
            }
            | Step::HookJavaAlias {
                keytool,
                keystore,
                alias,
            } => {
                match java_cert(cx.runner, keytool, keystore, alias)? {
                    None => return Ok(None),
                    Some(der) if der != cx.ca.der => {
                        return Err(TrustError::Command {
                            program: shown(keytool),
                            reason: format!(
                                "{} in {} is not this CA any more; left as it is",
                                tlskit_x509::text::escape(alias),
                                shown(keystore)
                            ),
                        })
                    }
                    Some(_) => {}
                }
                let cmd = keytool_cmd(keytool, keystore, &["-delete", "-alias", alias]);
                run_ok(cx.runner, &cmd).map(|_| None)
            }
        }
    }
}

fn undo_append(path: &Path, copy: Option<&Path>, cx: &Ctx<'_>) -> Result<Option<String>> {
    let Some(cur) = read_if_present(path)? else {
        return Ok(None);
    };
    let pem = cx.ca.pem.as_bytes();
    let before = match copy {
        Some(c) => tlskit_io::read(c, MAX_STORE_FILE_BYTES)?,
        None => Vec::new(),
    };
    let sep: &[u8] = if before.is_empty() || before.ends_with(b"\n") {
        b""
    } else {
        b"\n"
    };
    let written = [before.as_slice(), sep, pem].concat();
    if cur == written {
        // Unchanged since the install: exactly the file from before.
        return match copy {
            Some(_) => {
                tlskit_io::replace(path, &[&before], false)?;
                Ok(None)
            }
            None => std::fs::remove_file(path)
                .map(|()| None)
                .map_err(|e| TrustError::io(path, "cannot remove", e)),
        };
    }
    // Changed since: take out only the CA's block, keeping a copy of what was there.
    let Some(at) = cur.windows(pem.len()).position(|w| w == pem) else {
        return Ok(None);
    };
    make_backup_dir(cx.backups)?;
    let keep = cx.backups.join("changed-bundle.pem");
    tlskit_io::replace(&keep, &[&cur], true)?;
    tlskit_io::replace(path, &[&cur[..at], &cur[at + pem.len()..]], false)?;
    Ok(Some(format!(
        "{} had changed since the install: the CA's block was taken out (previous file kept as {})",
        shown(path),
        shown(&keep)
    )))
}
