//! The status page (`/ui`) in a real browser: headless Chromium driven
//! over WebDriver (chromedriver, through fantoccini) against a daemon on a
//! TCP listener with a token and the example shop app. The token gate,
//! the app list, a chart's layers, a user value holding `<script>` shown
//! as text, live progress during a slowed apply, and the chart of
//! operation durations showing the numbers of the daemon's `/metrics`. A
//! screenshot of each page is written to `TARGET/status-page/`.
//!
//! Without chromium and chromedriver the test fails under CI (`CI=true`)
//! and is skipped with a message elsewhere.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::daemon::Daemon;
use crate::support::{capstan, example_facts, target_dir};

const TOKEN: &str = "status-page-token-of-32-characters";
const HOSTILE: &str = "<script>window.pwned=1</script> & \"quoted\"";

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn wait_for_port(port: u16, what: &str) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what} did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Both browser programs, or why they are missing.
fn browser() -> Result<(PathBuf, PathBuf), String> {
    let find = |names: &[&str]| {
        names.iter().find_map(|name| {
            std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join(name))
                    .find(|p| p.is_file())
            })
        })
    };
    let chromium = find(&["chromium", "chromium-browser", "google-chrome"])
        .ok_or("no chromium on PATH (Debian package chromium)")?;
    let driver = find(&["chromedriver"])
        .ok_or("no chromedriver on PATH (Debian package chromium-driver)")?;
    Ok((chromium, driver))
}

/// `serve` on the daemon's state folder, on TCP with the token.
fn serve_tcp(d: &Daemon, port: u16, env: &[(&str, &str)]) -> Killed {
    let token = d.dir.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let log = std::fs::File::create(d.dir.join("daemon-tcp.log")).unwrap();
    let mut child = capstan()
        .arg("serve")
        .arg("--listen")
        .arg(format!("tcp:127.0.0.1:{port}"))
        .arg("--token-file")
        .arg(&token)
        .arg("--state")
        .arg(d.state())
        .arg("--trust")
        .arg(d.dir.join("keys"))
        .arg("--target")
        .arg(format!("dir:{}", d.applied().display()))
        .arg("--facts")
        .arg(example_facts("ha-replicas", "duplex.yaml"))
        .env_remove("CAPSTAN_TEST_PAUSE_AT")
        .env_remove("CAPSTAN_TEST_STEP_DELAY_MS")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(d.dir.join("daemon-tcp.log")).unwrap_or_default();
            panic!("the daemon exited with {status}: {log}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Killed(child)
}

/// One raw HTTP/1.1 request to `port`: (status, the whole answer).
fn raw(port: u16, method: &str, path: &str, headers: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

async fn screenshot(browser: &Client, name: &str) {
    let dir = target_dir().join("status-page");
    std::fs::create_dir_all(&dir).unwrap();
    let png = browser.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "{name}: not a PNG");
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

async fn text_of(browser: &Client, css: &str) -> String {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"))
        .text()
        .await
        .unwrap()
}

/// Runs `script` until it returns `true`, for up to a minute; the values
/// it returned meanwhile are in the panic message.
async fn wait_until(browser: &Client, what: &str, script: &str) {
    let started = Instant::now();
    loop {
        let value = browser.execute(script, Vec::new()).await.unwrap();
        if value == Value::Bool(true) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: still {value}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-hooks"),
    ignore = "needs the daemon's test hooks (a slowed apply): run with --features capstan/test-hooks (cargo xtask test does)"
)]
fn the_status_page_in_a_real_browser() {
    let (chromium, driver) = match browser() {
        Ok(found) => found,
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("the status page test needs a browser under CI: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}; install chromium and chromium-driver to run it");
            return;
        }
    };

    // The app, applied once at full speed over the unix socket, with a
    // user value holding markup.
    let mut d = Daemon::start("status_page");
    let bundle = d.shop_bundle("1.0.0", |_| {});
    d.ok(&["app", "upload", bundle.to_str().unwrap()]);
    d.ok(&[
        "override",
        "set",
        "shop",
        "web",
        "--set-string",
        &format!("env.BANNER={HOSTILE}"),
    ]);
    d.ok(&["app", "apply", "shop"]);
    d.kill();

    // The same state on TCP with a token, every step slowed.
    let port = free_port();
    let _daemon = serve_tcp(&d, port, &[("CAPSTAN_TEST_STEP_DELAY_MS", "400")]);
    let base = format!("http://127.0.0.1:{port}");

    let driver_port = free_port();
    let _driver = Killed(
        Command::new(&driver)
            .arg(format!("--port={driver_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for_port(driver_port, "chromedriver");

    let profile = d.dir.join("chromium-profile");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--window-size=1280,900",
                    format!("--user-data-dir={}", profile.display()),
                ],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let browser = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{driver_port}"))
            .await
            .unwrap();
        let result = pages(&browser, &base, port, &d.dir).await;
        let _ = browser.close().await;
        result
    });
}

async fn pages(browser: &Client, base: &str, port: u16, dir: &Path) {
    // The token gate: no session, sent to the form; a wrong token refused.
    browser.goto(&format!("{base}/ui")).await.unwrap();
    assert_eq!(browser.current_url().await.unwrap().path(), "/ui/login");
    screenshot(browser, "login").await;
    let field = browser.find(Locator::Id("token")).await.unwrap();
    field.send_keys("not-the-token").await.unwrap();
    browser
        .find(Locator::Id("login"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_until(
        browser,
        "the login error",
        "return document.getElementById('login-error') !== null;",
    )
    .await;
    assert_eq!(text_of(browser, "#login-error").await, "wrong token");
    assert!(browser.get_all_cookies().await.unwrap().is_empty());
    browser.goto(&format!("{base}/ui")).await.unwrap();
    assert_eq!(browser.current_url().await.unwrap().path(), "/ui/login");

    // The right one sets an HttpOnly, SameSite=Strict session cookie.
    let field = browser.find(Locator::Id("token")).await.unwrap();
    field.send_keys(TOKEN).await.unwrap();
    browser
        .find(Locator::Id("login"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // A click returns before the navigation it starts has finished.
    wait_until(
        browser,
        "the page /ui",
        "return location.pathname === '/ui';",
    )
    .await;
    let cookies = browser.get_all_cookies().await.unwrap();
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    let cookie = &cookies[0];
    assert_eq!(cookie.name(), "capstan_session");
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(format!("{:?}", cookie.same_site()), "Some(Strict)");
    // The page's script cannot read it.
    let seen = browser
        .execute("return document.cookie;", Vec::new())
        .await
        .unwrap();
    assert_eq!(seen, json!(""));
    // The cookie admits reads but not an operation; no cookie, no read.
    let session = format!("Cookie: capstan_session={}\r\n", cookie.value());
    let (status, answer) = raw(port, "GET", "/v1/apps", &session);
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = raw(port, "POST", "/v1/apps/shop/apply", &session);
    assert_eq!(status, 401, "{answer}");
    let (status, _) = raw(port, "GET", "/v1/apps", "");
    assert_eq!(status, 401);
    let (status, _) = raw(
        port,
        "GET",
        "/v1/apps",
        "Cookie: capstan_session=forged\r\n",
    );
    assert_eq!(status, 401);

    // The app list.
    let row = "#apps tr[data-app=\"shop\"]";
    assert_eq!(text_of(browser, &format!("{row} a")).await, "shop");
    assert_eq!(
        text_of(browser, &format!("{row} [data-field=\"state\"]")).await,
        "applied"
    );
    assert_eq!(
        text_of(browser, &format!("{row} [data-field=\"version\"]")).await,
        "1.0.0"
    );
    wait_until(
        browser,
        "the live line",
        "return document.getElementById('live').textContent.indexOf('updated') >= 0;",
    )
    .await;
    // This daemon has run no operation yet: its metrics have no durations.
    let none = text_of(browser, "#operation-durations").await;
    assert!(none.contains("No operation has finished"), "{none}");
    screenshot(browser, "apps").await;

    // The app page: a chart's layers side by side, the hostile value as
    // text and never run.
    browser
        .find(Locator::Css(&format!("{row} a")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_until(
        browser,
        "the page /ui/apps/shop",
        "return location.pathname === '/ui/apps/shop';",
    )
    .await;
    let layers = browser
        .find_all(Locator::Css("#chart-web [data-layer] h4"))
        .await
        .unwrap();
    let mut names = Vec::new();
    for layer in layers {
        names.push(layer.text().await.unwrap());
    }
    assert_eq!(
        names,
        ["chart-defaults", "static", "system", "user", "merged"]
    );
    let user = text_of(browser, "#chart-web [data-layer=\"user\"] pre").await;
    assert!(
        user.contains("<script>window.pwned=1</script> & \\\"quoted\\\""),
        "{user}"
    );
    let defaults = text_of(browser, "#chart-web [data-layer=\"chart-defaults\"] pre").await;
    assert!(defaults.contains("\"replicaCount\": 1"), "{defaults}");
    let merged = text_of(browser, "#chart-web [data-layer=\"merged\"] pre").await;
    assert!(merged.contains("window.pwned"), "{merged}");
    let run = browser
        .execute(
            "return [typeof window.pwned, document.scripts.length];",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(run, json!(["undefined", 1]));
    // Workload decisions and who decided, the history timeline.
    let decisions = text_of(browser, "#decisions").await;
    assert!(decisions.contains("db"), "{decisions}");
    let timeline = text_of(browser, "#timeline").await;
    assert!(timeline.contains("apply succeeded"), "{timeline}");
    assert!(timeline.contains("upload succeeded"), "{timeline}");
    screenshot(browser, "app").await;
    browser
        .execute(
            "document.getElementById('chart-web').scrollIntoView(); return true;",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(browser, "layers").await;

    // Live progress: an apply started from the CLI shows up on the open
    // page step by step, and its end too, without a reload.
    browser
        .execute("window.notReloaded = true; return true;", Vec::new())
        .await
        .unwrap();
    let out = capstan()
        .args(["app", "apply", "shop", "--no-wait", "--server", base])
        .env("CAPSTAN_TOKEN", TOKEN)
        .env("CAPSTAN_STATE", dir.join("state"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_until(
        browser,
        "the apply's progress",
        "return document.getElementById('progress').textContent.length > 0 \
         && document.querySelector('[data-field=\"state\"]').textContent === 'applying';",
    )
    .await;
    let first = text_of(browser, "#progress").await;
    screenshot(browser, "progress").await;
    let script = format!(
        "var p = document.getElementById('progress').textContent; \
         return p !== {} || document.querySelector('[data-field=\"state\"]').textContent === 'applied';",
        json!(first)
    );
    wait_until(browser, "the next step", &script).await;
    wait_until(
        browser,
        "the apply's end",
        "return document.querySelector('[data-field=\"state\"]').textContent === 'applied';",
    )
    .await;
    let kept = browser
        .execute("return window.notReloaded === true;", Vec::new())
        .await
        .unwrap();
    assert_eq!(kept, json!(true), "the page reloaded");

    // The daemon's metrics in the chart of operation durations: the same
    // numbers /metrics gives, bucket by bucket.
    let bearer = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, metrics) = raw(port, "GET", "/metrics", &bearer);
    assert_eq!(status, 200, "{metrics}");
    let count = metric(
        &metrics,
        "capstan_operation_duration_seconds_count{operation=\"apply\"}",
    );
    let sum = metric(
        &metrics,
        "capstan_operation_duration_seconds_sum{operation=\"apply\"}",
    );
    assert_eq!(count, 1.0, "{metrics}");
    assert!(sum > 0.0, "{metrics}");
    browser.goto(&format!("{base}/ui")).await.unwrap();
    let group = browser
        .find(Locator::Css(
            "#operation-durations g[data-operation=\"apply\"]",
        ))
        .await
        .unwrap();
    assert_eq!(
        group.attr("data-count").await.unwrap().as_deref(),
        Some("1")
    );
    let bars = group.find_all(Locator::Css("rect")).await.unwrap();
    let mut below = 0.0;
    let mut seen = Vec::new();
    for bar in &bars {
        let le = bar.attr("data-le").await.unwrap().unwrap();
        let shown: f64 = bar
            .attr("data-count")
            .await
            .unwrap()
            .unwrap()
            .parse()
            .unwrap();
        let cumulative = metric(
            &metrics,
            &format!(
                "capstan_operation_duration_seconds_bucket{{operation=\"apply\",le=\"{le}\"}}"
            ),
        );
        assert_eq!(shown, cumulative - below, "bucket le={le}: {metrics}");
        below = cumulative;
        seen.push(le);
    }
    assert_eq!(seen.last().map(String::as_str), Some("+Inf"), "{seen:?}");
    assert_eq!(below, count);
    let row = "#operation-durations-table tr[data-operation=\"apply\"]";
    assert_eq!(text_of(browser, &format!("{row} .count")).await, "1");
    assert_eq!(
        text_of(browser, &format!("{row} .mean")).await,
        format!("{:.3}s", sum / count)
    );
    browser
        .execute(
            "document.getElementById('operation-durations').scrollIntoView(); return true;",
            Vec::new(),
        )
        .await
        .unwrap();
    screenshot(browser, "durations").await;
}

/// The value of the sample `name` (with its labels) in Prometheus text.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}
