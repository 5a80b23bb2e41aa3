//! Where a tool started with `--listen 127.0.0.1:0` listens: the port the
//! kernel chose, read from the line the tool prints once it serves
//! (`TOOL: listening on http://ADDR/metrics`). Ports picked free
//! beforehand could be taken by any other socket before the tool bound
//! them.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Child;
use std::time::{Duration, Instant};

/// The `--listen` value that lets the kernel choose the port.
pub const ANY_PORT: &str = "127.0.0.1:0";

/// The address `child` (program `tool`, started with `--listen ANY_PORT`
/// and standard error piped) says it listens on, within 10 s; lines it
/// prints before (vcpustat says what it switched on) are passed over. Its
/// standard error is drained to the end meanwhile, so it never blocks on it.
pub fn announced(child: &mut Child, tool: &str) -> SocketAddr {
    let stderr = child.stderr.take().expect("standard error piped");
    let (line_read, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            // Once the address is taken nobody listens: drain on.
            let _ = line_read.send(line);
        }
    });
    let prefix = format!("{tool}: listening on ");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut before = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with(&prefix) => return local_address(&line),
            Ok(line) => before.push(line),
            Err(_) => {
                // A server that said something else may still be running.
                let _ = child.kill();
                let status = child.wait().expect("wait");
                panic!("{tool} ({status}) did not say where it listens within 10 s: {before:?}");
            }
        }
    }
}

/// The address in a tool's announcing line (`TOOL: listening on
/// http://ADDR/metrics`), if `line` is one.
pub fn address_in(line: &str) -> Option<SocketAddr> {
    let (_, rest) = line.split_once(": listening on http://")?;
    rest.strip_suffix("/metrics")?.parse().ok()
}

/// The address of the announcing `line`: a port of 127.0.0.1 the kernel chose.
fn local_address(line: &str) -> SocketAddr {
    let addr = address_in(line).unwrap_or_else(|| panic!("no address in {line:?}"));
    assert_eq!(addr.ip(), Ipv4Addr::LOCALHOST, "{line}");
    assert_ne!(addr.port(), 0, "{line}");
    addr
}
