//! `--listen`: each tool served over HTTP on 127.0.0.1, on the port the
//! kernel chose for `:0` and the tool said, scraped by a plain socket client: counters read at each scrape, GET and
//! HEAD of /metrics only, a silent client and a 1 MB request line handled
//! while normal scrapes go on, concurrent scrapes, exactly the address
//! given, and a clean stop on SIGTERM.

use crate::cxlstat_support;
use crate::listening::{self, ANY_PORT};
use crate::scratch::Scratch;
use crate::slowproc::SlowProc;

use hwstat::common::serve::HEADER_TIMEOUT;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server, killed if the test ends without stopping it.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `program args --listen 127.0.0.1:0` on the port it says.
    fn start(program: &str, args: &[&str]) -> Server {
        let mut child = Command::new(program)
            .args(args)
            .args(["--listen", ANY_PORT])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let tool = Path::new(program).file_name().unwrap().to_str().unwrap();
        let addr = listening::announced(&mut child, tool);
        Server { child, addr }
    }

    /// Sends `request` and reads the whole answer (the request asks the
    /// server to close), with a 10 s bound.
    fn ask(&self, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(request).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    }

    fn get(&self, method: &str, path: &str) -> String {
        self.ask(
            format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
    }

    /// The body of a successful scrape.
    fn scrape(&self) -> String {
        let answer = self.get("GET", "/metrics");
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(
            answer
                .to_ascii_lowercase()
                .contains("content-type: text/plain; version=0.0.4; charset=utf-8\r\n"),
            "{answer}"
        );
        answer.split_once("\r\n\r\n").unwrap().1.to_string()
    }

    /// SIGTERM, then the exit status within 5 s.
    fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "no exit 5 s after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One whole disk `sda` with `reads` reads completed.
fn iostat_tree(root: &Path, reads: u64) {
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::create_dir_all(root.join("sys/block/sda")).unwrap();
    std::fs::write(
        root.join("proc/stat"),
        "cpu  1 0 1 8 0 0 0 0 0 0\ncpu0 1 0 1 8 0 0 0 0 0 0\n",
    )
    .unwrap();
    std::fs::write(root.join("proc/uptime"), "100.00 90.00\n").unwrap();
    std::fs::write(
        root.join("proc/diskstats"),
        format!("   8       0 sda {reads} 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0\n"),
    )
    .unwrap();
}

/// A fresh directory for one test, removed when the test ends, also
/// when it fails.
fn scratch(name: &str) -> Scratch {
    crate::scratch::scratch(&format!("listen-{name}"))
}

fn value(exposition: &str, series: &str) -> f64 {
    exposition
        .lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{series} in {exposition}"))
        .parse()
        .unwrap()
}

#[test]
fn iostat_counters_are_read_at_each_scrape_with_self_metrics() {
    let root = scratch("iostat");
    iostat_tree(&root, 10);
    let server = Server::start(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root.to_str().unwrap(), "ALL"],
    );
    let first = server.scrape();
    assert_eq!(
        value(&first, "node_disk_reads_completed_total{device=\"sda\"}"),
        10.0
    );
    assert_eq!(value(&first, "hwstat_scrape_success"), 1.0);
    assert_eq!(
        value(&first, "hwstat_scrape_errors_total{cause=\"read\"}"),
        0.0
    );
    assert!(first.contains(&format!(
        "hwstat_build_info{{tool=\"iostat-rs\",version=\"{}\"}} 1\n",
        env!("CARGO_PKG_VERSION")
    )));
    assert!(value(&first, "hwstat_scrape_duration_seconds") >= 0.0);
    // The kernel's counters at the moment of the scrape.
    iostat_tree(&root, 25);
    assert_eq!(
        value(
            &server.scrape(),
            "node_disk_reads_completed_total{device=\"sda\"}"
        ),
        25.0
    );
    // A scrape that cannot list /sys/block (for `ALL`): counted by cause,
    // no partial output.
    std::fs::remove_dir_all(root.join("sys/block")).unwrap();
    let failed = server.scrape();
    assert_eq!(value(&failed, "hwstat_scrape_success"), 0.0);
    assert_eq!(
        value(&failed, "hwstat_scrape_errors_total{cause=\"read\"}"),
        1.0
    );
    assert!(!failed.contains("node_"), "{failed}");
    let status = server.stop();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// A `--sysroot` tree kept up to date by renaming new files over the old
/// (as `rsync` and any atomic writer do): each scrape reads the file the
/// name holds then, not the one it held at the first scrape.
#[test]
fn a_sysroot_file_replaced_by_a_rename_is_read_anew() {
    let root = scratch("renamed");
    iostat_tree(&root, 10);
    let server = Server::start(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root.to_str().unwrap(), "ALL"],
    );
    let series = "node_disk_reads_completed_total{device=\"sda\"}";
    assert_eq!(value(&server.scrape(), series), 10.0);
    let next = root.join("next");
    iostat_tree(&next, 25);
    for file in ["proc/stat", "proc/diskstats"] {
        std::fs::rename(next.join(file), root.join(file)).unwrap();
    }
    assert_eq!(value(&server.scrape(), series), 25.0);
    let status = server.stop();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// Reads one answer from `stream`: the header, then as many bytes of body
/// as its `Content-Length` says (HEAD and bodiless answers have none).
fn read_one_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).unwrap();
        assert_eq!(n, 1, "closed inside the header: {answer:?}");
        answer.push(byte[0]);
    }
    let header = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    let length = header
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    answer.extend(body);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_request_with_a_body_is_answered_with_connection_close() {
    // No answer reads a request body, so the server ends the connection
    // after answering one: the answer must say so, or a client that keeps
    // the connection alive sends its next request into a closed socket
    // (Python's http.client: BrokenPipeError on the next request).
    let root = scratch("body");
    iostat_tree(&root, 10);
    let server = Server::start(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root.to_str().unwrap()],
    );
    for (request, status) in [
        (
            "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
            "405",
        ),
        (
            "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
            "200",
        ),
        (
            "PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "404",
        ),
    ] {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let answer = read_one_answer(&mut stream);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{answer}"
        );
        assert!(
            answer
                .to_ascii_lowercase()
                .contains("connection: close\r\n"),
            "{request:?} was answered without Connection: close:\n{answer}"
        );
        // And the connection does end (end of file, not the 10 s timeout).
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "{rest:?}");
    }
    // A request without a body keeps its connection: two scrapes on one.
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    for _ in 0..2 {
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let answer = read_one_answer(&mut stream);
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(
            !answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
    }
    drop(stream);
    server.stop();
}

#[test]
fn only_get_and_head_of_metrics_and_bounded_requests() {
    let root = scratch("http");
    iostat_tree(&root, 10);
    let server = Server::start(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root.to_str().unwrap()],
    );
    let head = server.get("HEAD", "/metrics");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(head.ends_with("\r\n\r\n"), "HEAD has no body: {head}");
    assert!(server.get("GET", "/").starts_with("HTTP/1.1 404 "));
    assert!(server.get("GET", "/metrics/x").starts_with("HTTP/1.1 404 "));
    let post = server.get("POST", "/metrics");
    assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
    assert!(
        post.to_ascii_lowercase().contains("allow: get, head\r\n"),
        "{post}"
    );
    assert!(
        server
            .get("DELETE", "/metrics")
            .starts_with("HTTP/1.1 405 ")
    );
    // The host, in one valid Host header, as RFC 9112 asks of HTTP/1.1
    // (HTTP/1.0 may leave it out): 400 otherwise. They got metrics.
    for (host, status) in [
        ("", "400"),
        ("Host: a\r\nHost: b\r\n", "400"),
        ("Host: a b/c\r\n", "400"),
        ("Host: user@a\r\n", "400"),
        ("Host: 127.0.0.1:9100\r\n", "200"),
        ("Host: [::1]:9100\r\n", "200"),
    ] {
        let answer = server
            .ask(format!("GET /metrics HTTP/1.1\r\n{host}Connection: close\r\n\r\n").as_bytes());
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{host:?}: {answer}"
        );
    }
    let old = server.ask(b"GET /metrics HTTP/1.0\r\n\r\n");
    assert!(old.starts_with("HTTP/1.0 200 "), "{old}");
    // A 1 MB request line: refused with a 4xx status, nothing buffered whole.
    let mut long = b"GET /".to_vec();
    long.extend(std::iter::repeat_n(b'a', 1 << 20));
    long.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The server may close before the whole line is sent.
    let _ = stream.write_all(&long);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 431 ") || answer.starts_with("HTTP/1.1 414 "),
        "{answer}"
    );
    server.scrape();
}

#[test]
fn a_silent_client_blocks_nobody_and_is_closed_by_the_header_timeout() {
    let root = scratch("silent");
    iostat_tree(&root, 10);
    let server = Server::start(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root.to_str().unwrap()],
    );
    let mut silent = TcpStream::connect(server.addr).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let started = Instant::now();
    // Concurrent scrapes while the silent client holds its connection.
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let addr = server.addr;
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .unwrap();
                let mut answer = String::new();
                s.read_to_string(&mut answer).unwrap();
                answer
            })
        })
        .collect();
    for t in threads {
        let answer = t.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(answer.contains("node_disk_reads_completed_total{device=\"sda\"} 10\n"));
    }
    // Answered while the silent client holds its connection, not once its
    // header timeout (5 s) has closed it; the margin is for a loaded machine.
    assert!(
        started.elapsed() < HEADER_TIMEOUT - Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // The silent connection is closed after the 5 s header timeout.
    let mut rest = Vec::new();
    let _ = silent.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(4) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    server.scrape();
}

/// Scrapes that arrive while a collection runs are answered together by
/// the next one: each answer is read after its request came, and however
/// many ask at once, a scrape waits for at most two collections. Ten
/// scrapes at once used to take ten collections one after the other (with
/// 64 clients asking without pause, a scraper waited behind 63).
#[test]
fn scrapes_waiting_for_a_collection_share_the_next() {
    if let Some(reason) = crate::simkernel::unavailable() {
        crate::skip::skip("scrapes_waiting_for_a_collection_share_the_next", &reason);
        return;
    }
    let root = scratch("shared-collections");
    std::fs::create_dir_all(root.join("sys/block/sda")).unwrap();
    let delay = Duration::from_millis(500);
    let diskstats = "   8       0 sda 10 0 80 5 0 0 0 0 0 5 5 0 0 0 0 0 0\n";
    let proc = SlowProc::mount(&root.join("proc"), diskstats, delay);
    let server = Server::start(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root.to_str().unwrap()],
    );
    let before = proc.reads();
    let answers: Vec<String> = std::thread::scope(|scope| {
        let asking: Vec<_> = (0..10)
            .map(|_| scope.spawn(|| server.get("GET", "/metrics")))
            .collect();
        asking.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for answer in &answers {
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(answer.contains("node_disk_reads_completed_total{device=\"sda\"} 10\n"));
    }
    // One collection for the first scrape, one for those that came while
    // it ran (or one for all); a third for a thread the machine started
    // more than half a second late.
    let collections = proc.reads() - before;
    assert!(
        (1..=3).contains(&collections),
        "{collections} collections for 10 scrapes"
    );
}

#[test]
fn binds_exactly_the_address_given_and_refuses_a_port_in_use() {
    let root = scratch("bind");
    iostat_tree(&root, 10);
    let server = Server::start(
        env!("CARGO_BIN_EXE_iostat-rs"),
        &["--sysroot", root.to_str().unwrap()],
    );
    // 127.0.0.2 is loopback too, but not the address bound.
    let other = SocketAddr::from(([127, 0, 0, 2], server.addr.port()));
    assert!(TcpStream::connect(other).is_err());
    // The same address again: a one-line error, status 1.
    let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
        .args(["--sysroot", root.to_str().unwrap(), "--listen"])
        .arg(server.addr.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("--listen {}", server.addr)), "{err}");
    // What --listen cannot be combined with, and a malformed address.
    for args in [
        &["--listen", "127.0.0.1:1", "1"][..],
        &["--listen", "127.0.0.1:1", "-o", "csv"],
        &["--listen", "127.0.0.1:1", "--textfile", "/tmp/x.prom"],
        &["--listen", "localhost"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--listen"), "{err}");
    }
    let addr = server.addr;
    assert_eq!(server.stop().code(), Some(0));
    // Stopped: nobody listens there any more.
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn every_tool_refuses_charts_and_recordings_with_listen_and_writes_neither() {
    let dir = scratch("listen-svg");
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("never.svg");
    let svg = svg.to_str().unwrap();
    let vcpu_seed = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/vcpustat/seed");
    for (program, tool, args) in [
        (env!("CARGO_BIN_EXE_iostat-rs"), "iostat-rs", vec![]),
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            "vcpustat",
            vec!["--sysroot", vcpu_seed],
        ),
        (
            env!("CARGO_BIN_EXE_cxlstat"),
            "cxlstat",
            vec!["-e", "clock_ticks"],
        ),
    ] {
        let out = Command::new(program)
            .args(&args)
            .args(["--listen", "127.0.0.1:1", "--svg", svg])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{tool}");
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            format!(
                "{tool}: --listen 127.0.0.1:1 cannot be used with --svg: charts are drawn from \
                 interval reports, and a server makes none\n"
            )
        );
        assert!(!Path::new(svg).exists(), "{tool}");
        // Refused before the recording is opened: an old one is kept.
        let old = dir.join("old.rec");
        std::fs::write(&old, "an earlier recording\n").unwrap();
        let out = Command::new(program)
            .args(&args)
            .args(["--listen", "127.0.0.1:1", "--record"])
            .arg(&old)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{tool}");
        assert_eq!(
            std::fs::read_to_string(&old).unwrap(),
            "an earlier recording\n",
            "{tool}"
        );
    }
}

#[test]
fn vcpustat_serves_the_seed_counters() {
    let seed = format!(
        "{}/tests/fixtures/vcpustat/seed",
        env!("CARGO_MANIFEST_DIR")
    );
    let server = Server::start(env!("CARGO_BIN_EXE_vcpustat"), &["--sysroot", &seed]);
    let text = server.scrape();
    // cpu0's line of the seed: 6839 4126 2683 30 0 6821 18 0.
    assert_eq!(value(&text, "vcpustat_dispatches_total{cpu=\"0\"}"), 6839.0);
    assert_eq!(
        value(
            &text,
            "vcpustat_dispatches_by_numa_distance_total{cpu=\"0\",distance=\"home\"}"
        ),
        6821.0
    );
    assert_eq!(
        value(&text, "hwstat_scrape_errors_total{cause=\"parse\"}"),
        0.0
    );
    assert_eq!(server.stop().code(), Some(0));
}

#[test]
fn cxlstat_reads_its_open_events_at_each_scrape() {
    if !cxlstat_support::perf_usable("cxlstat_listen") {
        return;
    }
    let root = cxlstat_support::scratch("listen");
    let cpu = cxlstat_support::test_cpus()[0];
    cxlstat_support::software_tree(&root, &[("cxl_pmu_mem0.0", cpu)]);
    let server = Server::start(
        env!("CARGO_BIN_EXE_cxlstat"),
        &["--sysroot", root.to_str().unwrap(), "-e", "cpu_clock"],
    );
    let series = "{pmu=\"cxl_pmu_mem0.0\",event=\"cpu_clock\"}";
    let first = server.scrape();
    std::thread::sleep(Duration::from_millis(300));
    let second = server.scrape();
    let counted = |t: &str| value(t, &format!("cxlstat_event_counted_total{series}"));
    let running = |t: &str| value(t, &format!("cxlstat_event_running_seconds_total{series}"));
    assert!(counted(&second) > counted(&first));
    // cpu-clock counts nanoseconds while it runs: 300 ms more, within 5 %.
    let ran = running(&second) - running(&first);
    assert!(ran >= 0.29, "{ran}");
    assert!(((counted(&second) - counted(&first)) / 1e9 - ran).abs() / ran < 0.05);
    assert!(
        value(
            &second,
            &format!("cxlstat_event_enabled_seconds_total{series}")
        ) >= running(&second)
    );
    assert_eq!(server.stop().code(), Some(0));
}

/// A host name where `--listen` needs an address is refused by the three
/// tools with one reason, and so is `--listen` with `--textfile`.
#[test]
fn every_tool_explains_a_listen_address_and_a_textfile_alike() {
    let reason = "expected an IP address and a port, such as 127.0.0.1:9101 or [::1]:9101";
    for (program, tool, args) in [
        (env!("CARGO_BIN_EXE_iostat-rs"), "iostat-rs", vec![]),
        (env!("CARGO_BIN_EXE_vcpustat"), "vcpustat", vec![]),
        (
            env!("CARGO_BIN_EXE_cxlstat"),
            "cxlstat",
            vec!["-e", "clock_ticks"],
        ),
    ] {
        let out = Command::new(program)
            .args(&args)
            .args(["--listen", "localhost:9101"])
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_ne!(out.status.code(), Some(0), "{tool}");
        assert!(
            err.starts_with(&format!("{tool}: "))
                && err.contains(reason)
                && err.lines().count() == 1,
            "{err}"
        );
        let out = Command::new(program)
            .args(&args)
            .args([
                "--listen",
                "127.0.0.1:1",
                "--textfile",
                "/nonexistent/t.prom",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{tool}");
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            format!(
                "{tool}: --listen 127.0.0.1:1 cannot be used with --textfile: the server answers \
                 each scrape with the exposition the file would hold; use one of them\n"
            )
        );
    }
}

/// Another output with `--textfile` or `--listen` (whose expositions would
/// take its place) is refused by the three tools in the same words, naming
/// the option as it was given: `-o` with each tool's spelling of the
/// format, and cxlstat's `-x` (perf's field-separated lines).
#[test]
fn every_tool_refuses_another_output_beside_expositions_alike() {
    let iostat = env!("CARGO_BIN_EXE_iostat-rs");
    let cxlstat = env!("CARGO_BIN_EXE_cxlstat");
    let runs: [(&str, &str, &[&str], &str); 5] = [
        (iostat, "iostat-rs", &["-o", "csv"], "-o csv"),
        (iostat, "iostat-rs", &["-o", "json"], "-o JSON"),
        (
            env!("CARGO_BIN_EXE_vcpustat"),
            "vcpustat",
            &["-o", "ndjson"],
            "-o ndjson",
        ),
        (
            cxlstat,
            "cxlstat",
            &["-e", "clock_ticks", "-o", "json"],
            "-o json",
        ),
        (cxlstat, "cxlstat", &["-e", "clock_ticks", "-x", ";"], "-x"),
    ];
    for (program, tool, args, named) in runs {
        for (option, value, why) in [
            (
                "--textfile",
                "/nonexistent/t.prom",
                "--textfile cannot be used with {}: it writes Prometheus expositions instead of \
                 reports; use one of them",
            ),
            (
                "--listen",
                "127.0.0.1:1",
                "--listen 127.0.0.1:1 cannot be used with {}: the server answers each scrape \
                 with a Prometheus exposition, and writes no reports",
            ),
        ] {
            let out = Command::new(program)
                .args(args)
                .args([option, value])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{tool} {args:?} {option}");
            assert_eq!(
                String::from_utf8(out.stderr).unwrap(),
                format!("{tool}: {}\n", why.replace("{}", named)),
                "{args:?}"
            );
            assert!(out.stdout.is_empty(), "{tool} {args:?} {option}");
        }
    }
}

/// `-f DIR` and `+f DIR` with expositions, which read the system's
/// `/proc/diskstats` as node_exporter does, are refused: iostat-rs used to
/// ignore them and export the system's disks instead, without a word,
/// even for a directory that does not exist.
#[test]
fn iostat_rs_refuses_an_alternate_directory_beside_expositions() {
    let dir = std::env::temp_dir();
    let dir = dir.to_str().unwrap();
    let runs: [([&str; 2], [&str; 2], &str); 3] = [
        (["-f", dir], ["-o", "prometheus"], "-o prometheus"),
        (
            ["+f", dir],
            ["--textfile", "/nonexistent/t.prom"],
            "--textfile",
        ),
        (
            ["-f", "/nonexistent"],
            ["--listen", "127.0.0.1:1"],
            "--listen",
        ),
    ];
    for (alt, exposition, named) in runs {
        let out = Command::new(env!("CARGO_BIN_EXE_iostat-rs"))
            .args(alt)
            .args(exposition)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{alt:?} {exposition:?}");
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            format!(
                "iostat-rs: {} cannot be used with {named}: the expositions read the system's \
                 /proc/diskstats, as node_exporter does\n",
                alt[0]
            ),
        );
        assert!(out.stdout.is_empty(), "{alt:?} {exposition:?}");
    }
}
