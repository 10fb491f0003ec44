//! The CLI reference page of the book (`docs/src/reference/cli.md`),
//! generated from the clap definitions: every command's long `--help`, in
//! the order the command line lists them. `cargo xtask docs-cli` writes the
//! page; a test in `tests/e2e/docs.rs` fails when the committed page
//! differs from what this module generates.
//!
//! Owns only the rendering of the help text into Markdown; the commands and
//! their help are the other `cli` modules'. The output does not depend on
//! the terminal or the environment: a fixed width, and environment
//! variables named without their values.

use std::fmt::Write;

use clap::{Command, CommandFactory};

/// The width the help text is wrapped at on the page.
const WIDTH: usize = 100;

/// The Markdown of the CLI reference page.
#[must_use]
pub fn reference_markdown() -> String {
    let mut command = settle(super::examples::with_examples(super::Cli::command()));
    command.build();
    let mut page = String::from(
        "# CLI\n\n\
         Every `capstan` command with its options, as its `--help` prints them.\n\n\
         <!-- Generated from the clap definitions in host/src/cli by `cargo xtask docs-cli`; \
         do not edit by hand (a test compares this page with the generated one). -->\n\n\
         How the CLI finds the daemon, prints results and follows operations is in\n\
         [the CLI](../operating/cli.md); what its exit statuses mean, in\n\
         [exit codes](exit-codes.md).\n",
    );
    write_command(&mut page, &mut command, "capstan");
    page
}

/// `command` and its subcommands with a fixed width and hidden
/// environment values, so the help reads the same everywhere.
fn settle(command: Command) -> Command {
    let names: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    let mut command = command
        .term_width(WIDTH)
        .mut_args(|arg| arg.hide_env_values(true));
    for name in names {
        command = command.mut_subcommand(&name, settle);
    }
    command
}

fn write_command(page: &mut String, command: &mut Command, path: &str) {
    let help = command.render_long_help().to_string();
    let help: Vec<&str> = help.lines().map(str::trim_end).collect();
    let _ = write!(
        page,
        "\n## {path}\n\n```text\n{}\n```\n",
        help.join("\n").trim_end()
    );
    for sub in command.get_subcommands_mut() {
        if sub.get_name() == "help" || sub.is_hide_set() {
            continue;
        }
        let sub_path = format!("{path} {}", sub.get_name());
        write_command(page, sub, &sub_path);
    }
}
