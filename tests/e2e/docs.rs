//! The documentation: `README.md` and the book's pages under `docs/src`.
//!
//! Every shell example a reader would type runs here, page by page, in one
//! shell per page, with its output checked where the page shows it; every
//! internal link and anchor resolves; the CLI reference is what the clap
//! definitions generate; the README stays a front page.
//!
//! How a page's code blocks are read (docs/src/developing/book.md):
//!
//! - ```` ```sh ```` blocks run as written, in order, in one `bash` per
//!   page with `set -eu`; a failing command fails the page.
//! - ```` ```console ```` blocks hold `$ COMMAND` lines, each followed by
//!   the output it must print (stdout and stderr together). A line `...`
//!   stands for any number of lines, `[..]` inside a line for any text.
//! - `<!-- example: not-run: REASON -->` on the line before a block keeps
//!   it from running; the reason is required.
//! - `<!-- example: setup` ... `-->` holds commands the page needs but the
//!   reader does not (a daemon running, a key made): they run at that
//!   point, unseen.
//! - `<!-- examples: cluster -->` anywhere in a page: `~/.kube/config`
//!   points at the API-server double (`kube-double`, started in process).
//! - `<!-- examples: run by TEST -->`: another test runs the page's
//!   examples (the plugin-author walkthrough has its own).
//!
//! A page runs in a fresh folder `work/` beside `capstan/`, which stands
//! for the checkout (links to the workspace's files, and `target/` to the
//! cargo target folder the tests were built in); the README runs inside
//! `capstan/`. `HOME` is a fresh folder, and `capstan` and `kube-double`
//! are on `PATH`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kube_double::{KubeDouble, Options};

use crate::support::{fresh_dir, target_dir, workspace_root};

/// The README's limit: a front page, the rest is in the book.
const README_MAX_LINES: usize = 150;

/// Examples kept from running; each needs a reason, and there should be
/// few: today the commands CI runs itself (the two set-up commands, the
/// book, this test), benchmarks and fuzzing (minutes each), `cargo
/// install`, and what needs an OCI registry or a daemon on another host.
const MAX_NOT_RUN: usize = 14;

/// How long one page's examples may take.
const PAGE_TIMEOUT: Duration = Duration::from_secs(300);

/// README.md and every page of the book, workspace-relative, sorted.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = workspace_root();
    let mut out = Vec::new();
    walk(&root.join("docs/src"), &mut out);
    out.sort();
    let mut pages = vec![PathBuf::from("README.md")];
    pages.extend(
        out.iter()
            .map(|p| p.strip_prefix(&root).unwrap().to_path_buf()),
    );
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// One `$ COMMAND` of a console block and the output shown under it.
#[derive(Debug)]
struct Step {
    command: String,
    expected: Vec<String>,
}

#[derive(Debug)]
enum Block {
    /// A `sh` block, run as written.
    Sh { line: usize, code: String },
    /// A `console` block.
    Console { line: usize, steps: Vec<Step> },
    /// Hidden commands.
    Setup { code: String },
    /// A `sh` or `console` block marked not to run.
    NotRun { line: usize, reason: String },
}

#[derive(Debug, Default)]
struct Examples {
    blocks: Vec<Block>,
    cluster: bool,
    run_by: Option<String>,
}

/// The runnable blocks and annotations of one page.
fn parse(text: &str) -> Result<Examples, String> {
    let mut examples = Examples::default();
    let mut lines = text.lines().enumerate().peekable();
    let mut not_run: Option<(usize, String)> = None;
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("<!-- examples:") {
            let rest = rest.trim_end_matches("-->").trim();
            if rest == "cluster" {
                examples.cluster = true;
            } else if let Some(test) = rest.strip_prefix("run by ") {
                examples.run_by = Some(test.trim().to_owned());
            } else {
                return Err(format!("line {number}: unknown page annotation {rest:?}"));
            }
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("<!-- example: not-run") {
            let reason = rest.trim_start_matches(':').trim_end_matches("-->").trim();
            if reason.is_empty() {
                return Err(format!("line {number}: not-run without a reason"));
            }
            not_run = Some((number, reason.to_owned()));
            continue;
        }
        if trimmed == "<!-- example: setup" {
            let mut code = String::new();
            loop {
                let Some((_, line)) = lines.next() else {
                    return Err(format!("line {number}: setup comment not closed"));
                };
                if line.trim() == "-->" {
                    break;
                }
                code.push_str(line);
                code.push('\n');
            }
            examples.blocks.push(Block::Setup { code });
            continue;
        }
        if trimmed.starts_with("<!-- example") {
            return Err(format!("line {number}: unknown annotation {trimmed:?}"));
        }
        let Some(info) = trimmed.strip_prefix("```") else {
            if !trimmed.is_empty() && not_run.is_some() {
                return Err(format!(
                    "line {number}: a not-run annotation must stand right before its block"
                ));
            }
            continue;
        };
        let mut body = Vec::new();
        loop {
            let Some((_, line)) = lines.next() else {
                return Err(format!("line {number}: code block not closed"));
            };
            if line.trim() == "```" {
                break;
            }
            body.push(line);
        }
        let language = info.split([',', ' ']).next().unwrap_or_default();
        let runnable = matches!(language, "sh" | "bash" | "shell" | "console");
        if let Some((_, reason)) = not_run.take() {
            if !runnable {
                return Err(format!("line {number}: not-run on a block that never runs"));
            }
            examples.blocks.push(Block::NotRun {
                line: number,
                reason,
            });
            continue;
        }
        match language {
            "sh" | "bash" | "shell" => examples.blocks.push(Block::Sh {
                line: number,
                code: body.join("\n") + "\n",
            }),
            "console" => {
                let mut steps: Vec<Step> = Vec::new();
                for line in body {
                    if let Some(command) = line.strip_prefix("$ ") {
                        steps.push(Step {
                            command: command.to_owned(),
                            expected: Vec::new(),
                        });
                    } else if let Some(step) = steps.last_mut() {
                        step.expected.push(line.to_owned());
                    } else {
                        return Err(format!(
                            "line {number}: a console block starts with `$ COMMAND`"
                        ));
                    }
                }
                examples.blocks.push(Block::Console {
                    line: number,
                    steps,
                });
            }
            _ => {}
        }
    }
    Ok(examples)
}

/// Whether `actual` is what a console block shows: lines equal, `...`
/// for any lines, `[..]` for any text within a line.
fn output_matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| output_matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(line, tail)| line_matches(first, line) && output_matches(rest, tail)),
    }
}

/// Trailing spaces are not compared: a table's last column pads them.
fn line_matches(expected: &str, actual: &str) -> bool {
    let (expected, actual) = (expected.trim_end(), actual.trim_end());
    let parts: Vec<&str> = expected.split("[..]").collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return expected == actual;
    };
    let Some(mut rest) = actual.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// The page's blocks as one bash script; console outputs go to
/// `OUT/N`, in order.
fn script(page: &Path, examples: &Examples, out: &Path) -> String {
    let mut script = String::from("set -eu\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n");
    let mut step_number = 0;
    for block in &examples.blocks {
        match block {
            Block::Setup { code } => script.push_str(code),
            Block::NotRun { .. } => {}
            Block::Sh { line, code } => {
                script.push_str(&format!("echo '### {}:{line}'\n{code}", page.display()));
            }
            Block::Console { line, steps } => {
                for step in steps {
                    let file = quote(&out.join(step_number.to_string()));
                    script.push_str(&format!(
                        "echo '### {}:{line}: $ '{}\n( {} ) >{file} 2>&1 || {{ status=$?; echo \"exit status $status\"; cat {file}; exit 1; }}\n",
                        page.display(),
                        quote(Path::new(&step.command)),
                        step.command,
                    ));
                    step_number += 1;
                }
            }
        }
    }
    script
}

/// The checkout as a page sees it: a folder of links to the workspace's
/// entries, with `target` the folder the tests were built in.
fn checkout(at: &Path) {
    std::fs::create_dir_all(at).unwrap();
    for entry in std::fs::read_dir(workspace_root()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), at.join(&name)).unwrap();
    }
    std::os::unix::fs::symlink(target_dir(), at.join("target")).unwrap();
}

/// Runs one page's examples; `Err` says what failed.
fn run_page(page: &Path, examples: &Examples) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let name = page.display().to_string().replace(['/', '.'], "_");
    let root = fresh_dir(&format!("docs_{name}"));
    checkout(&root.join("capstan"));
    let work = if page == Path::new("README.md") {
        root.join("capstan")
    } else {
        root.join("work")
    };
    std::fs::create_dir_all(&work).unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = root.join("outputs");
    std::fs::create_dir_all(&out).unwrap();
    let _double = if examples.cluster {
        let double = KubeDouble::start(Options {
            ready_after: Duration::from_millis(50),
            ..Options::default()
        })
        .unwrap();
        std::fs::create_dir_all(home.join(".kube")).unwrap();
        double.write_kubeconfig(&home.join(".kube/config")).unwrap();
        Some(double)
    } else {
        None
    };
    let bin = Path::new(env!("CARGO_BIN_EXE_capstan")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = root.join("examples.log");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(script(page, examples, &out))
        .current_dir(&work)
        .env("PATH", path)
        .env("HOME", &home)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("XDG_STATE_HOME")
        .env_remove("CAPSTAN_STATE")
        .env_remove("CAPSTAN_SERVER")
        .env_remove("CAPSTAN_TOKEN")
        .env_remove("KUBECONFIG")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(root.join("examples.err")).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > PAGE_TIMEOUT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The shell and what it left running (a daemon) are one group.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(std::process::Stdio::null())
        .status();
    let _ = child.wait();
    let stdout = std::fs::read_to_string(&log).unwrap_or_default();
    let stderr = std::fs::read_to_string(root.join("examples.err")).unwrap_or_default();
    match status {
        None => return Err(format!("timed out\n{stdout}\n{stderr}")),
        Some(status) if !status.success() => {
            return Err(format!("{status}\n{stdout}\n{stderr}"));
        }
        Some(_) => {}
    }
    let mut step_number = 0;
    for block in &examples.blocks {
        let Block::Console { line, steps } = block else {
            continue;
        };
        for step in steps {
            let actual = read(&out.join(step_number.to_string()));
            let actual_lines: Vec<&str> = actual.lines().collect();
            if !output_matches(&step.expected, &actual_lines) {
                return Err(format!(
                    "line {line}: `$ {}` printed\n{actual}\nwhere the page shows\n{}",
                    step.command,
                    step.expected.join("\n")
                ));
            }
            step_number += 1;
        }
    }
    Ok(())
}

/// Whether a test named `path` (`module::name`) is in tests/e2e.
fn test_exists(path: &str) -> bool {
    let Some((module, name)) = path.rsplit_once("::") else {
        return false;
    };
    let file = workspace_root().join(format!("tests/e2e/{module}.rs"));
    std::fs::read_to_string(file).is_ok_and(|text| text.contains(&format!("fn {name}()")))
}

#[test]
fn every_shell_example_runs_as_written() {
    // The pages copy the example plugins the suite builds.
    crate::support::plugin_wasm("capstan-example-storage");
    let root = workspace_root();
    let mut failures = Vec::new();
    let mut not_run = Vec::new();
    let mut ran = 0;
    for page in pages() {
        let examples = match parse(&read(&root.join(&page))) {
            Ok(examples) => examples,
            Err(e) => {
                failures.push(format!("{}: {e}", page.display()));
                continue;
            }
        };
        for block in &examples.blocks {
            if let Block::NotRun { line, reason } = block {
                not_run.push(format!("{}:{line}: {reason}", page.display()));
            }
        }
        if let Some(test) = &examples.run_by {
            if !test_exists(test) {
                failures.push(format!("{}: no test {test} runs it", page.display()));
            }
            continue;
        }
        let runs = examples
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Sh { .. } | Block::Console { .. }));
        if !runs {
            continue;
        }
        ran += 1;
        if let Err(e) = run_page(&page, &examples) {
            failures.push(format!("{}: {e}", page.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 10, "only {ran} pages have examples that ran");
    assert!(
        not_run.len() <= MAX_NOT_RUN,
        "{} examples do not run (at most {MAX_NOT_RUN}):\n{}",
        not_run.len(),
        not_run.join("\n")
    );
}

/// The heading anchors of a Markdown page, as mdbook makes them.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut anchors = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let mut id = String::new();
        for c in title.chars() {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                id.extend(c.to_lowercase());
            } else if c.is_whitespace() {
                id.push('-');
            }
        }
        let count = seen.iter().filter(|s| **s == id).count();
        seen.push(id.clone());
        anchors.push(if count == 0 {
            id
        } else {
            format!("{id}-{count}")
        });
    }
    anchors
}

/// The link targets of a Markdown text: `[text](target)` and
/// `![alt](target)` outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Drop code spans: a link inside backticks is text.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((index + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_internal_link_and_anchor_resolves() {
    let root = workspace_root();
    let mut broken = Vec::new();
    for page in pages() {
        let text = read(&root.join(&page));
        let in_book = page.starts_with("docs/src");
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                root.join(&page)
            } else {
                let joined = root.join(page.parent().unwrap()).join(path);
                match joined.canonicalize() {
                    Ok(file) => file,
                    Err(_) => {
                        broken.push(format!("{}:{line}: {target}: no such file", page.display()));
                        continue;
                    }
                }
            };
            if in_book && !file.starts_with(root.join("docs/src").canonicalize().unwrap()) {
                broken.push(format!(
                    "{}:{line}: {target}: a book page links outside the book (the built book would not have it)",
                    page.display()
                ));
                continue;
            }
            if let Some(fragment) = fragment {
                if file.extension().is_none_or(|e| e != "md") {
                    continue;
                }
                if !anchors(&read(&file)).iter().any(|a| a == fragment) {
                    broken.push(format!(
                        "{}:{line}: {target}: no heading with the anchor #{fragment}",
                        page.display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn every_book_page_is_in_the_summary_and_says_what_it_is_for() {
    let root = workspace_root();
    let summary = read(&root.join("docs/src/SUMMARY.md"));
    let listed: Vec<String> = links(&summary).into_iter().map(|(_, t)| t).collect();
    let mut problems = Vec::new();
    for page in pages() {
        let Ok(relative) = page.strip_prefix("docs/src") else {
            continue;
        };
        let relative = relative.display().to_string();
        if relative == "SUMMARY.md" {
            continue;
        }
        if !listed.contains(&relative) {
            problems.push(format!("{relative}: not in SUMMARY.md"));
        }
        let text = read(&root.join(&page));
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let title = lines.next().unwrap_or_default();
        let purpose = lines.next().unwrap_or_default();
        if !title.starts_with("# ") || purpose.starts_with('#') || purpose.starts_with("```") {
            problems.push(format!(
                "{relative}: starts with a title and a line on what the page is for"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_readme_is_a_front_page() {
    let readme = read(&workspace_root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES}: move the details into the book (docs/src)"
    );
    // The two set-up commands stay at the top.
    let first_block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_default();
    assert!(
        first_block.starts_with("cargo xtask demo ") && first_block.contains("\ncargo xtask test "),
        "{first_block}"
    );
}

/// `CAPSTAN_BLESS_DOCS=1` (`cargo xtask docs-cli`) writes the page
/// instead of comparing it.
#[test]
fn the_cli_reference_is_generated_from_clap() {
    let path = workspace_root().join("docs/src/reference/cli.md");
    let generated = capstan::cli::reference_markdown();
    if std::env::var_os("CAPSTAN_BLESS_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let first = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()));
        panic!(
            "docs/src/reference/cli.md is not what the clap definitions generate \
             (first difference at line {}); run `cargo xtask docs-cli`",
            first + 1
        );
    }
}

#[test]
fn console_output_matching() {
    let expected: Vec<String> = ["a [..] c", "...", "end"].map(String::from).to_vec();
    assert!(output_matches(&expected, &["a b c", "x", "y", "end"]));
    assert!(output_matches(&expected, &["a  c", "end"]));
    assert!(!output_matches(&expected, &["a b d", "end"]));
    assert!(!output_matches(&expected, &["a b c", "end", "more"]));
}

#[test]
fn annotations_are_read_and_checked() {
    let page = "# T\n\nfor\n\n<!-- examples: cluster -->\n<!-- example: not-run: needs a registry -->\n```sh\npush\n```\n<!-- example: setup\nmake key\n-->\n```console\n$ ls\nx\n```\n";
    let examples = parse(page).unwrap();
    assert!(examples.cluster);
    assert!(
        matches!(&examples.blocks[0], Block::NotRun { reason, .. } if reason == "needs a registry")
    );
    assert!(matches!(&examples.blocks[1], Block::Setup { code } if code == "make key\n"));
    assert!(
        matches!(&examples.blocks[2], Block::Console { steps, .. } if steps[0].expected == ["x"])
    );
    assert!(parse("<!-- example: not-run -->\n```sh\nx\n```\n").is_err());
    assert!(parse("<!-- example: not-run: r -->\n\ntext\n```sh\nx\n```\n").is_err());
    assert!(parse("<!-- example: nonsense -->\n").is_err());
}
