//! `tlskit completions SHELL` and `tlskit man --out-dir DIR`: generated from the same clap
//! definition as `--help`, so they never drift from the flags.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap_complete::Shell;

use crate::output::{CmdResult, Outcome};

/// Arguments of `tlskit completions`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit completions bash > /etc/bash_completion.d/tlskit\n  tlskit completions zsh > \"${fpath[1]}/_tlskit\"\n  tlskit completions fish > ~/.config/fish/completions/tlskit.fish\n  tlskit completions elvish >> ~/.config/elvish/rc.elv\n  tlskit completions powershell >> $PROFILE"
)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum, value_name = "SHELL")]
    shell: Shell,
}

/// Arguments of `tlskit man`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  tlskit man --out-dir /usr/local/share/man/man1 && mandb -q\n  tlskit man --out-dir target/man && man -l target/man/tlskit-serve.1\n\nWrites tlskit.1 and one page per subcommand (tlskit-store-show.1, ...), each\natomically; the folder is created when missing."
)]
pub(crate) struct ManArgs {
    /// Folder the pages are written to.
    #[arg(long, value_name = "DIR")]
    out_dir: PathBuf,
}

pub(crate) fn completions(a: CompletionsArgs) -> CmdResult {
    let mut cmd = crate::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "tlskit", &mut out);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&out)?;
    stdout.flush()?;
    Ok(Outcome::Success)
}

pub(crate) fn man(a: ManArgs) -> CmdResult {
    std::fs::create_dir_all(&a.out_dir)
        .with_context(|| format!("{}: cannot create the folder", a.out_dir.display()))?;
    let mut cmd = crate::command().disable_help_subcommand(true);
    cmd.build();
    let mut written = Vec::new();
    write_pages(&cmd, &a.out_dir, &mut written)?;
    for p in &written {
        println!("{}", p.display());
    }
    Ok(Outcome::Success)
}

/// One page for `cmd` (named by its display name: `tlskit-store-show.1`), then its
/// subcommands'.
fn write_pages(
    cmd: &clap::Command,
    dir: &std::path::Path,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let page = clap_mangen::Man::new(cmd.clone());
    let mut text = Vec::new();
    page.render(&mut text)?;
    let path = dir.join(page.get_filename());
    // Pages are for everyone to read (0644); a page already there is replaced.
    tlskit_io::replace(&path, &[&text], false)?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}
