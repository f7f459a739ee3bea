//! A PostgreSQL server of the test's own, to restart under load: `initdb` in a temporary
//! directory, `pg_ctl start` on a free port of 127.0.0.1 (its socket in that directory,
//! `fsync` and `synchronous_commit` on, as initdb sets them), [`crash`](ThrowawayPostgres::crash)
//! with `pg_ctl stop -m immediate` (no checkpoint: recovery replays the WAL at the next
//! start, as after a power cut of the server process) and [`start`](ThrowawayPostgres::start)
//! again. Never the machine's own service. The binaries are found under
//! `/usr/lib/postgresql/*/bin` (the newest) or in `$MCP_TEST_PG_BIN`. PostgreSQL refuses to
//! run as root: as root, every command runs as the user `postgres` (`runuser`), which then
//! owns the directory. Dropping it stops the server (within `DROP_STOP_TIMEOUT`, then
//! kills the postmaster) and deletes the directory.

use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use mcp_tasks::conformance::report_skip;
use tokio::process::Command;

/// The upper bound of one `initdb` or `pg_ctl` command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the drop waits for `pg_ctl stop` (its own `-t`, and the bound of the command
/// itself) before it kills the postmaster.
const DROP_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The variable naming the directory of the PostgreSQL binaries.
pub const BIN_ENV: &str = "MCP_TEST_PG_BIN";
/// The user the server runs as when the test runs as root.
const RUN_AS: &str = "postgres";

/// A running (or crashed) server of the test's own.
#[derive(Debug)]
pub struct ThrowawayPostgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    run_as: Option<&'static str>,
}

impl ThrowawayPostgres {
    /// A started server, or `None` after [`report_skip`] when no PostgreSQL binaries are
    /// found (or, as root, there is no `postgres` user to run them); under
    /// `MCP_REQUIRE_SERVICES=1` or `CI=true` that panics instead, as does a server that
    /// does not start.
    pub async fn start_or_skip(what: &str) -> Option<ThrowawayPostgres> {
        let found = find_bin().and_then(|bin| {
            let root = std::fs::metadata("/proc/self")
                .map(|m| m.uid() == 0)
                .unwrap_or(false);
            match (root, user_exists(RUN_AS)) {
                (true, false) => Err(format!("running as root and there is no user {RUN_AS}")),
                (root, _) => Ok((bin, root.then_some(RUN_AS))),
            }
        });
        let (bin, run_as) = match found {
            Ok(found) => found,
            Err(why) => {
                let required = std::env::var("MCP_REQUIRE_SERVICES").as_deref() == Ok("1")
                    || std::env::var("CI").as_deref() == Ok("true");
                assert!(
                    !required,
                    "{what}: {why}, and MCP_REQUIRE_SERVICES=1 / CI=true requires it"
                );
                report_skip(&format!("{what}: {why}"));
                return None;
            }
        };
        let stamp = mcp_tasks::TaskId::random().expect("random");
        let dir = std::env::temp_dir().join(format!("mcp-tests-pg-{}", &stamp.as_str()[..12]));
        let port = free_port().expect("a free port");
        let server = ThrowawayPostgres {
            bin,
            dir,
            port,
            run_as,
        };
        if let Err(why) = server.init().await {
            panic!("{what}: the PostgreSQL server did not start: {why}");
        }
        if let Err(why) = server.start().await {
            panic!(
                "{what}: the PostgreSQL server did not start: {why}\n{}",
                server.log_tail()
            );
        }
        Some(server)
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    async fn init(&self) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| e.to_string())?;
        if let Some(user) = self.run_as {
            let mut chown = Command::new("chown");
            chown.arg(user).arg(&self.dir);
            run(&mut chown).await?;
        }
        let data = self.data();
        let mut initdb = self.command("initdb");
        initdb
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&data);
        run(&mut initdb).await
    }

    /// Starts the server and waits until it accepts connections.
    pub async fn start(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c max_connections=200",
            self.port,
            self.dir.display()
        );
        let mut start = self.command("pg_ctl");
        start
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-w", "-t", "60", "-o", &options, "start"]);
        run(&mut start).await
    }

    /// Stops the server at once (`-m immediate`: no checkpoint, the WAL replayed at the
    /// next start).
    pub async fn crash(&self) -> Result<(), String> {
        let mut stop = self.command("pg_ctl");
        stop.arg("-D")
            .arg(self.data())
            .args(["-w", "-m", "immediate", "stop"]);
        run(&mut stop).await
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// `exe` of the binaries, run as [`RUN_AS`] when the test runs as root.
    fn command(&self, exe: &str) -> Command {
        let exe = self.bin.join(exe);
        match self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(exe);
                command
            }
            None => Command::new(exe),
        }
    }
}

impl Drop for ThrowawayPostgres {
    fn drop(&mut self) {
        let exe = self.bin.join("pg_ctl");
        let mut stop = match self.run_as {
            Some(user) => {
                let mut c = std::process::Command::new("runuser");
                c.args(["-u", user, "--"]).arg(exe);
                c
            }
            None => std::process::Command::new(exe),
        };
        let secs = DROP_STOP_TIMEOUT.as_secs().to_string();
        let stopped = stop
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-t", &secs, "-m", "immediate", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .is_ok_and(|child| wait_bounded(child, DROP_STOP_TIMEOUT + Duration::from_secs(5)));
        if !stopped {
            self.kill_postmaster();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl ThrowawayPostgres {
    /// Kills (SIGKILL) the postmaster `postmaster.pid` names, if it is still running on
    /// this directory (its command line names it: a stale file's pid may be another's
    /// now). Its backends end when they see it gone.
    fn kill_postmaster(&self) {
        let data = self.data();
        let Some(pid) = std::fs::read_to_string(data.join("postmaster.pid"))
            .ok()
            .and_then(|f| f.lines().next()?.trim().parse::<u32>().ok())
        else {
            return;
        };
        let ours = std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
            let data = data.to_string_lossy();
            cmdline.split(|b| *b == 0).any(|arg| arg == data.as_bytes())
        });
        if ours {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Waits for `child` to exit successfully within `limit` (checking every 50 ms); kills
/// it past that. Whether it exited successfully in time.
fn wait_bounded(mut child: std::process::Child, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

/// The directory of the PostgreSQL binaries: `$MCP_TEST_PG_BIN`, else the newest
/// `/usr/lib/postgresql/*/bin` that holds `initdb`.
fn find_bin() -> Result<PathBuf, String> {
    if let Ok(bin) = std::env::var(BIN_ENV) {
        return Ok(PathBuf::from(bin));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| format!("no PostgreSQL binaries (/usr/lib/postgresql: {e}; set {BIN_ENV})"))?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| format!("no initdb under /usr/lib/postgresql/*/bin (set {BIN_ENV})"))
}

fn user_exists(user: &str) -> bool {
    std::fs::read_to_string("/etc/passwd")
        .map(|p| p.lines().any(|l| l.split(':').next() == Some(user)))
        .unwrap_or(false)
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// Runs `command` to its end (within [`COMMAND_TIMEOUT`]); its output in the error.
async fn run(command: &mut Command) -> Result<(), String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let what = format!("{command:?}");
    let output = tokio::time::timeout(COMMAND_TIMEOUT, command.output())
        .await
        .map_err(|_| format!("{what}: no end in {COMMAND_TIMEOUT:?}"))?
        .map_err(|e| format!("{what}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what}: {}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
