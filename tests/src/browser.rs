//! A headless Chromium driven by `chromedriver` over WebDriver's HTTP JSON protocol, for
//! the console's browser test. Small on purpose: a session, navigation, scripts run in
//! the page, clicks, DevTools commands through chromedriver's `goog/cdp/execute`, and a
//! screenshot. Every request and every wait is bounded. The driver runs in a process
//! group of its own, which the browser it starts joins: dropping the [`Browser`] (a test
//! that panics) kills that whole group, so no browser outlives its test.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// How long one WebDriver request (or the driver's start) may take.
pub const DRIVER_WAIT: Duration = Duration::from_secs(30);

/// How long [`Browser::click`] tries again an element the page has not drawn yet or has
/// just replaced.
pub const CLICK_WAIT: Duration = Duration::from_secs(5);

/// The browser and driver programs, from `MCP_TEST_CHROMIUM` / `MCP_TEST_CHROMEDRIVER`
/// or found on `PATH` (`chromium`, `chromedriver`), or why they cannot be used.
pub fn programs() -> Result<(PathBuf, PathBuf), String> {
    let find = |var: &str, name: &str| -> Result<PathBuf, String> {
        if let Some(path) = std::env::var_os(var) {
            let path = PathBuf::from(path);
            return match path.is_file() {
                true => Ok(path),
                false => Err(format!("{var} names no file: {}", path.display())),
            };
        }
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
            .ok_or_else(|| format!("`{name}` is not on PATH (or set {var})"))
    };
    Ok((
        find("MCP_TEST_CHROMIUM", "chromium")?,
        find("MCP_TEST_CHROMEDRIVER", "chromedriver")?,
    ))
}

/// One browser session.
#[derive(Debug)]
pub struct Browser {
    client: reqwest::Client,
    /// `http://127.0.0.1:PORT/session/ID`.
    session: String,
    /// Held for its `Drop`: the driver and the browser end with the session.
    _driver: DriverGroup,
}

/// The driver process, whose process group (the driver and the browser it started) is
/// killed when this is dropped.
#[derive(Debug)]
struct DriverGroup(Child);

impl Drop for DriverGroup {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            // The group's id is the driver's pid (`process_group(0)`).
            let _ = std::process::Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{pid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl Browser {
    /// Starts `chromedriver` on a free 127.0.0.1 port and opens a headless `chromium`
    /// session in a `width`x`height` window.
    pub async fn start(
        chromium: &Path,
        chromedriver: &Path,
        width: u32,
        height: u32,
    ) -> Result<Browser, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("a free port: {e}"))?
            .port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", chromedriver.display()))?;
        // From here on, any early return kills the driver's group (and a browser in it).
        let driver = DriverGroup(driver);
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(DRIVER_WAIT)
            .build()
            .map_err(|e| e.to_string())?;
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        loop {
            let ready = client.get(format!("{base}/status")).send().await;
            if let Ok(response) = ready {
                let status: Value = response.json().await.unwrap_or(Value::Null);
                if status["value"]["ready"] == true {
                    break;
                }
            }
            if started.elapsed() > DRIVER_WAIT {
                return Err(format!("chromedriver not ready within {DRIVER_WAIT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let args = [
            "--headless=new".to_owned(),
            // Root (as in CI containers) cannot use the sandbox.
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--no-first-run".to_owned(),
            format!("--window-size={width},{height}"),
        ];
        let capabilities = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": chromium, "args": args },
                "timeouts": { "script": 10_000, "pageLoad": 30_000 },
            }}
        });
        let reply = send(
            &client,
            reqwest::Method::POST,
            &format!("{base}/session"),
            Some(capabilities),
        )
        .await?;
        let id = reply["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no session id: {reply}"))?;
        Ok(Browser {
            client,
            session: format!("{base}/session/{id}"),
            _driver: driver,
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        send(
            &self.client,
            method,
            &format!("{}{path}", self.session),
            body,
        )
        .await
    }

    /// Runs a DevTools protocol command (`Network.setExtraHTTPHeaders`, ...).
    pub async fn cdp(&self, cmd: &str, params: Value) -> Result<Value, String> {
        self.call(
            reqwest::Method::POST,
            "/goog/cdp/execute",
            Some(json!({ "cmd": cmd, "params": params })),
        )
        .await
    }

    /// Loads `url` (waits for the document to load).
    pub async fn navigate(&self, url: &str) -> Result<(), String> {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await
            .map(drop)
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page and returns
    /// what it returns.
    pub async fn script(&self, script: &str, args: Value) -> Result<Value, String> {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
        .await
    }

    /// Runs `script` until it returns something other than `null` or `false`, at most
    /// `within`; returns that value, or says what was awaited.
    pub async fn wait_for(
        &self,
        what: &str,
        within: Duration,
        script: &str,
        args: Value,
    ) -> Result<Value, String> {
        let started = Instant::now();
        loop {
            let value = self.script(script, args.clone()).await?;
            if !value.is_null() && value != false {
                return Ok(value);
            }
            if started.elapsed() > within {
                return Err(format!("waited {within:?} for {what}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the first element matching the CSS `selector`. A page that renders again
    /// may replace the element between finding and clicking it, or not have drawn it yet:
    /// those two errors (`stale element reference`, `no such element`; nothing was
    /// clicked) are tried again for at most [`CLICK_WAIT`].
    pub async fn click(&self, selector: &str) -> Result<(), String> {
        let started = Instant::now();
        loop {
            match self.click_once(selector).await {
                Err(e)
                    if (e.contains("stale element reference") || e.contains("no such element"))
                        && started.elapsed() < CLICK_WAIT =>
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                done => return done,
            }
        }
    }

    async fn click_once(&self, selector: &str) -> Result<(), String> {
        let found = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({ "using": "css selector", "value": selector })),
            )
            .await
            .map_err(|e| format!("{selector}: {e}"))?;
        // The W3C element reference key.
        let element = found["element-6066-11e4-a52e-4f735466cecf"]
            .as_str()
            .ok_or_else(|| format!("{selector}: no element reference in {found}"))?
            .to_owned();
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await
        .map(drop)
        .map_err(|e| format!("click {selector}: {e}"))
    }

    /// A PNG of the whole page (beyond the window, through DevTools).
    pub async fn screenshot(&self) -> Result<Vec<u8>, String> {
        use base64::Engine as _;
        let shot = self
            .cdp(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true }),
            )
            .await?;
        let data = shot["data"]
            .as_str()
            .ok_or_else(|| format!("no screenshot data: {shot}"))?;
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("screenshot: {e}"))
    }

    /// Ends the session, then the driver's process group.
    pub async fn quit(self) {
        let _ = tokio::time::timeout(DRIVER_WAIT, self.client.delete(&self.session).send()).await;
    }
}

/// One WebDriver request: its `value`, or the driver's error.
async fn send(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let mut request = client.request(method, url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let reply: Value = response
        .json()
        .await
        .map_err(|e| format!("{url}: {status}: {e}"))?;
    if status.is_success() {
        Ok(reply["value"].clone())
    } else {
        Err(format!(
            "{url}: {status}: {} {}",
            reply["value"]["error"], reply["value"]["message"]
        ))
    }
}
