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
    let text = render_page(cmd, &page)?;
    let path = dir.join(page.get_filename());
    // Pages are for everyone to read (0644); a page already there is replaced.
    tlskit_io::replace(&path, &[text.as_bytes()], false)?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}

/// The page of `cmd`: clap_mangen's, with a SYNOPSIS that names each option's argument
/// (`[--listen <ADDR>...]`), the text after the options (examples, tables) laid out as
/// written (indented lines verbatim, never filled) in the sections man-pages(7) names
/// (clap_mangen puts all of it under a section it calls EXTRA), and every character
/// outside ASCII as a troff escape, so that troff renders it without warnings.
fn render_page(cmd: &clap::Command, page: &clap_mangen::Man) -> anyhow::Result<String> {
    let mut raw = Vec::new();
    page.render(&mut raw)?;
    let mut text = String::from_utf8(raw).context("clap_mangen wrote a page that is not UTF-8")?;
    text = replace_section(&text, "SYNOPSIS", &synopsis(cmd));
    if let Some(after) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) {
        text = replace_whole_section(&text, "EXTRA", &after_sections(&after.to_string()));
    }
    Ok(ascii_only(&text))
}

/// `page` with the body of section `name` (`.SH NAME` up to the next `.SH` or the end)
/// replaced by `body` (unchanged when the page has no such section).
fn replace_section(page: &str, name: &str, body: &str) -> String {
    let head = format!(".SH {name}\n");
    let Some(start) = page.find(&head).map(|i| i + head.len()) else {
        return page.to_string();
    };
    let end = page[start..]
        .find("\n.SH ")
        .map_or(page.len(), |i| start + i + 1);
    format!("{}{body}{}", &page[..start], &page[end..])
}

/// `page` with section `name`, its `.SH` line included, replaced by `sections` (troff
/// text that starts with its own `.SH`); unchanged when the page has no such section.
fn replace_whole_section(page: &str, name: &str, sections: &str) -> String {
    let head = format!(".SH {name}\n");
    let Some(start) = page.find(&head) else {
        return page.to_string();
    };
    let body = start + head.len();
    let end = page[body..]
        .find("\n.SH ")
        .map_or(page.len(), |i| body + i + 1);
    format!("{}{sections}{}", &page[..start], &page[end..])
}

/// The text after the options (`after_help`), paragraph by paragraph (blank lines apart),
/// as man-pages(7)'s sections in its order: EXIT STATUS (a paragraph that starts with
/// `Exit status:`), NOTES (any other), EXAMPLES (a paragraph that starts with
/// `Examples:`, that heading left out).
fn after_sections(after: &str) -> String {
    let (mut exit, mut notes, mut examples) = (Vec::new(), Vec::new(), Vec::new());
    for para in after.split("\n\n") {
        let para = para.trim_matches('\n');
        if para.trim().is_empty() {
            continue;
        }
        if let Some(rest) = para.strip_prefix("Examples:") {
            examples.push(rest.trim_start_matches('\n'));
        } else if para.starts_with("Exit status:") {
            exit.push(para);
        } else {
            notes.push(para);
        }
    }
    let mut out = String::new();
    for (name, paras) in [
        ("EXIT STATUS", exit),
        ("NOTES", notes),
        ("EXAMPLES", examples),
    ] {
        if !paras.is_empty() {
            out.push_str(&format!(".SH {name}\n"));
            out.push_str(&verbatim_aware(&paras.join("\n\n")));
        }
    }
    out
}

/// Text for troff: `\`, `-` and `'` escaped, a leading `.` made literal.
fn roff_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    if s.starts_with('.') {
        out.push_str("\\&");
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            '\'' => out.push_str("\\*(Aq"),
            c => out.push(c),
        }
    }
    out
}

/// Every character outside ASCII as troff's `\[uXXXX]` (troff reads its input as Latin-1
/// unless a preprocessor converts it: `man` does, `groff` without -k does not).
fn ascii_only(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push_str(&format!("\\[u{:04X}]", u32::from(c)));
        }
    }
    out
}

/// The SYNOPSIS body: the command, then each visible option with its argument
/// (`[--listen <ADDR>...]`; a required one without brackets), the positional arguments
/// and the subcommand. A group never breaks inside (unbreakable spaces) nor is
/// hyphenated; lines break between groups.
fn synopsis(cmd: &clap::Command) -> String {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut groups = vec![format!("\\fB{}\\fR", roff_escape(name).replace(' ', "\\ "))];
    let value = |a: &clap::Arg| -> String {
        let names = a
            .get_value_names()
            .map(|v| v.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>())
            .unwrap_or_else(|| vec![format!("<{}>", a.get_id().as_str().to_uppercase())]);
        let many = a
            .get_num_args()
            .is_some_and(|r| r.max_values() > names.len());
        let mut v = format!(
            "\\fI{}\\fR",
            roff_escape(&names.join(" ")).replace(' ', "\\ ")
        );
        if many {
            v.push_str("...");
        }
        v
    };
    let mut opts: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .collect();
    opts.sort_by_key(|a| a.get_display_order());
    for a in opts {
        let flag = match (a.get_short(), a.get_long()) {
            (Some(s), Some(l)) => {
                format!("\\fB\\-{s}\\fR|\\fB{}\\fR", roff_escape(&format!("--{l}")))
            }
            (Some(s), None) => format!("\\fB\\-{s}\\fR"),
            (None, Some(l)) => format!("\\fB{}\\fR", roff_escape(&format!("--{l}"))),
            (None, None) => continue,
        };
        let takes = a.get_num_args().is_some_and(|r| r.takes_values());
        let body = if takes {
            format!("{flag}\\ {}", value(a))
        } else {
            flag
        };
        groups.push(if a.is_required_set() {
            body
        } else {
            format!("[{body}]")
        });
    }
    for a in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let v = value(a);
        groups.push(if a.is_required_set() {
            v
        } else {
            format!("[{v}]")
        });
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        let sub = "\\fICOMMAND\\fR".to_string();
        groups.push(if cmd.is_subcommand_required_set() {
            sub
        } else {
            format!("[{sub}]")
        });
    }
    // Left-aligned (`.na` keeps the adjustment mode for `.ad` to resume), never
    // hyphenated inside a group (`\%`).
    let line: Vec<String> = groups.iter().map(|g| format!("\\%{g}")).collect();
    format!(".na\n{}\n.ad\n", line.join(" "))
}

/// The text after the options as troff: a line that starts with white space (examples,
/// tables) stays as written (no-fill mode), other lines are filled as prose, a blank line
/// starts a paragraph.
fn verbatim_aware(text: &str) -> String {
    let mut out = String::new();
    let mut verbatim = false;
    for line in text.lines() {
        if line.trim().is_empty() {
            if verbatim {
                out.push_str(".fi\n");
                verbatim = false;
            }
            out.push_str(".PP\n");
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        if indented != verbatim {
            out.push_str(if indented { ".nf\n" } else { ".fi\n" });
            verbatim = indented;
        }
        out.push_str(&roff_escape(line));
        out.push('\n');
    }
    if verbatim {
        out.push_str(".fi\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{
        after_sections, ascii_only, replace_section, replace_whole_section, roff_escape,
        verbatim_aware,
    };

    /// clap_mangen's EXTRA becomes EXIT STATUS, NOTES and EXAMPLES, in man-pages(7)'s
    /// order, each paragraph in the section it belongs to.
    #[test]
    fn the_text_after_the_options_goes_to_named_sections() {
        let after = "Examples:\n  tlskit a --b\n\nThe socket: x.\n\nExit status: 0 done.";
        let sections = after_sections(after);
        assert_eq!(
            sections,
            ".SH EXIT STATUS\nExit status: 0 done.\n.SH NOTES\nThe socket: x.\n\
             .SH EXAMPLES\n.nf\n  tlskit a \\-\\-b\n.fi\n"
        );
        let page = ".TH x 1\n.SH OPTIONS\no\n.SH EXTRA\nold\n.SH VERSION\nv\n";
        assert_eq!(
            replace_whole_section(page, "EXTRA", &sections),
            format!(".TH x 1\n.SH OPTIONS\no\n{sections}.SH VERSION\nv\n")
        );
        assert_eq!(
            after_sections("Examples:\n  a\n"),
            ".SH EXAMPLES\n.nf\n  a\n.fi\n"
        );
        assert_eq!(after_sections(""), "");
    }

    #[test]
    fn indented_lines_stay_as_written_and_prose_is_filled() {
        let text = "Examples:\n  tlskit a --b\n  # c\n\nProse line\nmore.\n  x -> y  1 s\nEnd.";
        assert_eq!(
            verbatim_aware(text),
            "Examples:\n.nf\n  tlskit a \\-\\-b\n  # c\n.fi\n.PP\nProse line\nmore.\n.nf\n  x \\-> y  1 s\n.fi\nEnd.\n"
        );
    }

    #[test]
    fn troff_text_is_escaped_and_ascii() {
        assert_eq!(roff_escape(".x 'a' \\ -"), "\\&.x \\*(Aqa\\*(Aq \\e \\-");
        assert_eq!(ascii_only("räk。"), "r\\[u00E4]k\\[u3002]");
    }

    #[test]
    fn a_section_body_is_replaced_up_to_the_next_section() {
        let page = ".TH x 1\n.SH SYNOPSIS\nold\nlines\n.SH DESCRIPTION\nd\n";
        assert_eq!(
            replace_section(page, "SYNOPSIS", "new\n"),
            ".TH x 1\n.SH SYNOPSIS\nnew\n.SH DESCRIPTION\nd\n"
        );
        assert_eq!(
            replace_section(page, "DESCRIPTION", "e\n"),
            ".TH x 1\n.SH SYNOPSIS\nold\nlines\n.SH DESCRIPTION\ne\n"
        );
        assert_eq!(replace_section(page, "EXTRA", "z\n"), page);
    }
}
