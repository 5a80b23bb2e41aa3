//! `--listen` against clients that hold connections without being
//! scrapers: clients that connect and say nothing, clients that send
//! requests and never read the answers, and clients that never stop
//! asking. A newcomer takes the place of the connection that has waited
//! longest on its client, or else of the one asking most often, so a
//! scraper is answered at once however many such clients there are, from
//! whichever addresses; one address still holds at most [`MAX_CONNECTIONS_PER_PEER`]
//! connections; and a client that never reads is closed once its answer
//! has waited [`WRITE_TIMEOUT`] without progress. The clients connect from
//! several addresses of 127/8 (Linux routes all of it to lo), as any local
//! user can, to stand for several hosts.

use crate::listening::{self, ANY_PORT};
use crate::namespace;
use crate::procstate::wait_with_timeout;
use crate::scratch::Scratch;

use hwstat::common::serve::{
    CONNECTION_LIFETIME, HEADER_TIMEOUT, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_PEER, WRITE_TIMEOUT,
};

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Devices in the tree served: each adds about 1 kB to an answer, so an
/// answer (about 190 kB) is far more than the kernels buffer for a client
/// that does not read (about 70 kB; see [`connect_from`]).
const DEVICES: usize = 200;
/// Requests each stalled client sends at once (pipelined): 11 kB, more
/// than hyper reads into its 8 KiB buffer, so that some wait unread in the
/// kernel, as a request that has just arrived does.
const PIPELINED: usize = 300;
/// The segment size the test's clients ask for, an Ethernet path's.
const SEGMENT: libc::c_int = 1400;
/// A plain scrape, asking the server to close afterwards.
const SCRAPE: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/// A running iostat-rs, killed and its tree removed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// Its kernel tree, removed after the server has ended.
    _root: Scratch,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// The sockets the server holds: its listener and its connections.
    fn sockets(&self) -> usize {
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).unwrap();
        fds.flatten()
            .filter(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
            })
            .count()
    }

    /// Waits (up to `limit`) until the server holds `n` sockets.
    fn await_sockets(&self, n: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.sockets() != n {
            assert!(
                Instant::now() < deadline,
                "the server holds {} sockets, not {n}",
                self.sockets()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// iostat-rs serving a tree of [`DEVICES`] disks on a port of 127.0.0.1.
fn start(name: &str) -> Server {
    start_under(name, &[])
}

/// As [`start`], started by `prlimit` with `limits` (`--nofile=40`).
fn start_under(name: &str, limits: &[&str]) -> Server {
    start_with(name, limits, None)
}

/// `prlimit LIMITS -- iostat-rs --sysroot ROOT --listen ANY_PORT`, in a
/// private mount namespace after the shell commands `setup` when given.
fn prlimit_iostat(limits: &[&str], root: &Path, setup: Option<&str>) -> Command {
    let mut args: Vec<std::ffi::OsString> = limits.iter().map(Into::into).collect();
    args.push("--".into());
    args.push(env!("CARGO_BIN_EXE_iostat-rs").into());
    args.push("--sysroot".into());
    args.push(root.into());
    args.extend(["--listen".into(), ANY_PORT.into()]);
    match setup {
        Some(setup) => namespace::command(setup, "prlimit", &args),
        None => {
            let mut command = Command::new("prlimit");
            command.args(args);
            command
        }
    }
}

/// As [`start_under`], in a private mount namespace after `setup`.
fn start_with(name: &str, limits: &[&str], setup: Option<&str>) -> Server {
    let root = device_root(name);
    let mut child = prlimit_iostat(limits, &root, setup)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = listening::announced(&mut child, "iostat-rs");
    Server {
        child,
        addr,
        _root: root,
    }
}

/// A new directory for the test `name` holding a [`device_tree`], removed
/// when dropped.
fn device_root(name: &str) -> Scratch {
    let root = crate::scratch::scratch(&format!("listen-limits-{name}"));
    device_tree(&root);
    root
}

/// `/proc` and `/sys/block` with [`DEVICES`] whole disks `vd0`...
fn device_tree(root: &Path) {
    std::fs::create_dir_all(root.join("proc")).unwrap();
    let mut diskstats = String::new();
    for i in 0..DEVICES {
        std::fs::create_dir_all(root.join(format!("sys/block/vd{i}"))).unwrap();
        diskstats.push_str(&format!(
            " 252 {i} vd{i} {} 0 80 5 7 0 56 3 0 5 5 0 0 0 0 0 0\n",
            1000 + i
        ));
    }
    std::fs::write(root.join("proc/diskstats"), diskstats).unwrap();
    std::fs::write(
        root.join("proc/stat"),
        "cpu  1 0 1 8 0 0 0 0 0 0\ncpu0 1 0 1 8 0 0 0 0 0 0\n",
    )
    .unwrap();
    std::fs::write(root.join("proc/uptime"), "100.00 90.00\n").unwrap();
}

/// A connection to `server` from `local` (an address of 127/8), with a
/// receive buffer of a few kB, as a client that reads little keeps it, and
/// segments of [`SEGMENT`] bytes, as over a network: the server's kernel
/// sizes its send buffer by the segment, and with lo's own 64 kB segments
/// would take in megabytes of answers for a client that reads nothing.
fn connect_from(local: Ipv4Addr, server: SocketAddr) -> TcpStream {
    connect_bound(local, server, |fd| {
        set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 4096);
        set_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, SEGMENT);
    })
}

/// A connection to `server` from `local`, its socket given to `options`
/// before it connects.
fn connect_bound(local: Ipv4Addr, server: SocketAddr, options: impl FnOnce(&OwnedFd)) -> TcpStream {
    let SocketAddr::V4(server) = server else {
        panic!("{server} is not IPv4");
    };
    // SAFETY: a new socket; its descriptor is owned at once.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(raw >= 0, "socket: {}", std::io::Error::last_os_error());
    // SAFETY: `raw` is a descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    options(&fd);
    let to_sockaddr = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let from = to_sockaddr(local, 0);
    // SAFETY: a sockaddr_in of the length given, on our own socket.
    let bound = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&from as *const libc::sockaddr_in).cast(),
            len,
        )
    };
    assert_eq!(
        bound,
        0,
        "bind {local}: {}",
        std::io::Error::last_os_error()
    );
    let to = to_sockaddr(*server.ip(), server.port());
    // SAFETY: as above.
    let connected = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&to as *const libc::sockaddr_in).cast(),
            len,
        )
    };
    assert_eq!(
        connected,
        0,
        "connect {server}: {}",
        std::io::Error::last_os_error()
    );
    TcpStream::from(fd)
}

/// Sets the int socket option `level`/`name` of `fd` to `value`.
fn set_int(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) {
    // SAFETY: an int option of the right size on our own socket.
    let set = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(
        set,
        0,
        "setsockopt {level}/{name}: {}",
        std::io::Error::last_os_error()
    );
}

/// Whether part of an answer has reached `stream`: bytes wait in its
/// receive queue.
fn answer_arrived(stream: &TcpStream) -> bool {
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int, on a descriptor we own.
    let asked = unsafe { libc::ioctl(stream.as_raw_fd(), libc::FIONREAD, &mut queued) };
    assert_eq!(asked, 0, "FIONREAD: {}", std::io::Error::last_os_error());
    queued > 0
}

/// A client from `local` that sends [`PIPELINED`] scrapes and never reads.
fn stalled_client(local: Ipv4Addr, server: SocketAddr) -> TcpStream {
    let mut stream = connect_from(local, server);
    stream
        .write_all(&b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(PIPELINED))
        .unwrap();
    stream
}

/// A scraper let in by closing another client is answered at once, not
/// after a silent or stalled client's timeout ([`HEADER_TIMEOUT`],
/// [`WRITE_TIMEOUT`]) ran out; the margin is for a loaded machine.
fn assert_answered_before_a_timeout(started: Instant) {
    let limit = HEADER_TIMEOUT.min(WRITE_TIMEOUT) - Duration::from_secs(1);
    let took = started.elapsed();
    assert!(took < limit, "answered after {took:?}, a timeout's wait");
}

/// What the server does with a scrape from `local`: `Some(answer)`, or
/// `None` when it closes the connection without one. A connection held
/// for 3 s without an answer fails the test.
fn scrape_from(local: Ipv4Addr, server: SocketAddr) -> Option<String> {
    let mut stream = connect_from(local, server);
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    // A connection closed at once may refuse the request.
    let _ = stream.write_all(SCRAPE);
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) if answer.is_empty() => None,
        Ok(_) => Some(String::from_utf8_lossy(&answer).into_owned()),
        Err(e) if e.kind() == ErrorKind::ConnectionReset && answer.is_empty() => None,
        Err(e) => panic!("scrape from {local}: {e} after {} bytes", answer.len()),
    }
}

/// Whether the server has closed `stream` (end of file or reset once the
/// bytes it sent are read), within 3 s.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut sink = Vec::new();
    match stream.read_to_end(&mut sink) {
        Ok(_) => true,
        Err(e) => e.kind() == ErrorKind::ConnectionReset,
    }
}

/// An answer that is a complete, successful scrape of the tree.
fn assert_scraped(answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:.200}");
    let last = DEVICES - 1;
    assert!(
        answer.contains(&format!(
            "node_disk_reads_completed_total{{device=\"vd{last}\"}} {}\n",
            1000 + last
        )),
        "{answer:.200}"
    );
}

/// A client from `local` that connects and sends nothing.
fn silent_client(local: Ipv4Addr, server: SocketAddr) -> TcpStream {
    connect_from(local, server)
}

#[test]
fn silent_clients_from_any_addresses_never_keep_a_scraper_out() {
    let server = start("silent");
    let host = |last: u8| Ipv4Addr::new(127, 0, 0, last);
    // Every place taken by clients that say nothing, a peer's share from
    // each of two addresses (what kept every scrape out before): 127.0.0.3
    // first, then 127.0.0.2.
    let mut silent: Vec<TcpStream> = [3, 2]
        .into_iter()
        .flat_map(|last| (0..MAX_CONNECTIONS_PER_PEER).map(move |_| last))
        .map(|last| silent_client(host(last), server.addr))
        .collect();
    assert_eq!(silent.len(), MAX_CONNECTIONS);
    // The listener and every silent client's connection.
    server.await_sockets(1 + MAX_CONNECTIONS, Duration::from_secs(10));
    let started = Instant::now();
    let answer = scrape_from(host(1), server.addr);
    assert_scraped(&answer.expect("a scraper was kept out"));
    // The scraper's place is free once the server has closed its end: a
    // client coming before that would find the server full, and close
    // silent[1] for it (this failed once in five suites beside load).
    server.await_sockets(1 + MAX_CONNECTIONS - 1, Duration::from_secs(10));
    // Full again, and 127.0.0.2 has its share: a scraper from there takes
    // the place of its own client that waited longest (silent[32]), not of
    // the one that waited longest of all (silent[1], of 127.0.0.3).
    silent.push(silent_client(host(3), server.addr));
    let answer = scrape_from(host(2), server.addr);
    assert_scraped(&answer.expect("a scraper from a full peer was kept out"));
    assert_answered_before_a_timeout(started);
    assert!(closed_by_server(&mut silent[0]));
    assert!(closed_by_server(&mut silent[MAX_CONNECTIONS_PER_PEER]));
    for still in [1, MAX_CONNECTIONS_PER_PEER + 1, MAX_CONNECTIONS] {
        let stream = &mut silent[still];
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let open =
            matches!(stream.read(&mut [0u8; 1]), Err(e) if e.kind() == ErrorKind::WouldBlock);
        assert!(open, "silent client {still} was closed");
    }
}

#[test]
fn clients_that_never_read_give_way_and_are_closed_after_the_write_timeout() {
    let server = start("stall");
    // Every place taken, a peer's share from each of several addresses.
    let peers = MAX_CONNECTIONS.div_ceil(MAX_CONNECTIONS_PER_PEER);
    let mut held: Vec<TcpStream> = (0..peers)
        .flat_map(|p| {
            let local = Ipv4Addr::new(127, 0, 0, 3 + p as u8);
            (0..MAX_CONNECTIONS_PER_PEER).map(move |_| local)
        })
        .take(MAX_CONNECTIONS)
        .map(|local| stalled_client(local, server.addr))
        .collect();
    // Their answers are stuck once part of each has arrived. The server
    // collects one answer at a time: none had arrived when the scraper
    // came straight after connecting them, and beside 32 busy loops (2 s
    // for the 64) the scraper waited behind them past its 3 s.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !held.iter().all(answer_arrived) {
        assert!(
            Instant::now() < deadline,
            "{} of {MAX_CONNECTIONS} stalled clients answered in 60 s",
            held.iter().filter(|s| answer_arrived(s)).count()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // A scraper takes the place of the one stuck longest, at once.
    let started = Instant::now();
    let answer = scrape_from(Ipv4Addr::new(127, 0, 0, 2), server.addr);
    assert_scraped(&answer.expect("the stalled clients kept a scraper out"));
    assert_answered_before_a_timeout(started);
    // The others are closed once their answers have waited WRITE_TIMEOUT,
    // well before the connection lifetime (120 s): the server is left
    // with its listener.
    server.await_sockets(1, CONNECTION_LIFETIME / 4);
    for stream in &mut held {
        assert!(
            closed_by_server(stream),
            "a client that never reads is open"
        );
    }
}

/// Clients that pipeline `HEAD` requests without pause and read the
/// answers, a peer's share from 127.0.0.1 and from 127.0.0.2, until `stop`
/// (or 60 s): each connection always has a request being answered or
/// arriving, and one closed by the server is opened again at once. Returns
/// how many connections have had an answer, and the clients' thread.
fn pipeline_heads(
    server: SocketAddr,
    stop: Arc<AtomicBool>,
) -> (Arc<AtomicUsize>, std::thread::JoinHandle<()>) {
    let answered = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&answered);
    let open = move |local: Ipv4Addr| {
        let stream = connect_bound(local, server, |_| {});
        stream.set_nonblocking(true).unwrap();
        (stream, local, false)
    };
    let clients = std::thread::spawn(move || {
        let mut clients: Vec<_> = [1, 2]
            .into_iter()
            .flat_map(|last| (0..MAX_CONNECTIONS_PER_PEER).map(move |_| last))
            .map(|last| open(Ipv4Addr::new(127, 0, 0, last)))
            .collect();
        let requests = b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(20);
        let mut sink = [0u8; 65536];
        let deadline = Instant::now() + Duration::from_secs(60);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            for client in &mut clients {
                // What does not fit waits in the kernel: the server always
                // has another request to read.
                let _ = client.0.write(&requests);
                let closed = match client.0.read(&mut sink) {
                    Ok(0) => true,
                    Ok(_) => {
                        if !std::mem::replace(&mut client.2, true) {
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                        false
                    }
                    Err(e) => e.kind() != ErrorKind::WouldBlock,
                };
                if closed {
                    *client = open(client.1);
                    client.2 = true;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    (answered, clients)
}

/// Clients that keep every place busy with pipelined requests, whose small
/// answers their kernel takes at once, are not "requests being answered"
/// that a newcomer must respect: they ask many times a second, a scraper
/// once in seconds, and the one asking most gives its place. The scraper
/// waits for at most two collections, which answer every request waiting
/// at their start. 64 such connections from two addresses used to keep
/// every scrape out (the newcomer was closed at once), from 127.0.0.1
/// itself or from any other address.
#[test]
fn clients_that_never_stop_asking_give_way_to_a_scraper() {
    let server = start("pipelined-heads");
    let stop = Arc::new(AtomicBool::new(false));
    let (answered, clients) = pipeline_heads(server.addr, Arc::clone(&stop));
    let deadline = Instant::now() + Duration::from_secs(30);
    while answered.load(Ordering::Relaxed) < MAX_CONNECTIONS {
        assert!(
            Instant::now() < deadline,
            "{} of {MAX_CONNECTIONS} pipelining clients answered in 30 s",
            answered.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // From an address of theirs (its share full) and from another (the
    // server full), a few times over.
    for round in 0..3 {
        for last in [1, 3] {
            let started = Instant::now();
            let answer = scrape_from(Ipv4Addr::new(127, 0, 0, last), server.addr);
            let answer = answer.unwrap_or_else(|| {
                panic!("round {round}: a scraper from 127.0.0.{last} was kept out")
            });
            assert_scraped(&answer);
            assert_answered_before_a_timeout(started);
        }
    }
    stop.store(true, Ordering::Relaxed);
    clients.join().expect("the pipelining clients failed");
}

/// Under an open-file limit below [`MAX_CONNECTIONS`] plus what the server
/// holds, silent clients still never keep a scraper out, and the scrape
/// still has descriptors to read the kernel with: the places shrink to
/// what the limit leaves. They used not to: past the limit `accept` failed
/// with EMFILE, the scraper waited in the kernel's queue behind silent
/// clients until their header timeout closed them (or for as long as they
/// reconnected), and the scrapes that did run failed for want of a
/// descriptor.
#[test]
fn silent_clients_never_keep_a_scraper_out_under_a_tight_open_file_limit() {
    let server = start_under("nofile", &["--nofile=40"]);
    let host = |last: u8| Ipv4Addr::new(127, 0, 0, last);
    // More clients than the limit has descriptors, from four addresses;
    // those the server cannot take wait in its queue.
    let _silent: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|i| silent_client(host(3 + (i % 4) as u8), server.addr))
        .collect();
    for _ in 0..3 {
        let started = Instant::now();
        let answer = scrape_from(host(2), server.addr);
        assert_scraped(&answer.expect("a scraper was kept out"));
        assert_answered_before_a_timeout(started);
    }
}

/// An open-file limit that leaves no descriptor for a connection is
/// refused at the start, in one line, before the server says it listens;
/// one the hard limit can raise is raised, and the scrapes are whole. The
/// server used to announce itself and then, with a single place and no
/// descriptor for the scrape's reads, answer with failed scrapes, or accept
/// nothing at all.
#[test]
fn an_open_file_limit_with_no_room_is_raised_or_refused() {
    assert_no_room_is_raised_or_refused("no-room", None);
}

/// As [`an_open_file_limit_with_no_room_is_raised_or_refused`], where
/// `/proc` is not mounted (a container, a chroot): the descriptors open
/// are counted without `/proc/self/fd`. They used not to be: the server
/// took the limit for one with room, kept it low, announced itself, and
/// its scrapes failed with EMFILE.
#[test]
fn without_proc_an_open_file_limit_with_no_room_is_raised_or_refused() {
    if !crate::skip::runs_unless(
        "without_proc_an_open_file_limit_with_no_room_is_raised_or_refused",
        namespace::unavailable(),
    ) {
        return;
    }
    assert_no_room_is_raised_or_refused("no-proc", Some("umount -l /proc"));
}

/// A soft and hard open-file limit of 10 is refused in one line before
/// the server says it listens; a soft limit of 10 under a hard one of 4096
/// is raised to 4096 and the scrapes are whole. In a private mount
/// namespace after `setup` when given.
fn assert_no_room_is_raised_or_refused(name: &str, setup: Option<&str>) {
    let root = device_root(name);
    let mut refused = prlimit_iostat(&["--nofile=10"], &root, setup)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_with_timeout(&mut refused, Duration::from_secs(10), "the refusal");
    let said = crate::procstate::stderr_text(&mut refused);
    assert_eq!(status.code(), Some(1), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.starts_with(&format!(
            "iostat-rs: --listen {ANY_PORT}: the open-file limit (10) leaves no descriptor \
             for a connection beside the "
        )) && said.trim_end().ends_with(" (`ulimit -n`)"),
        "{said}"
    );
    // The same soft limit under a hard one with room: raised.
    let server = start_with(&format!("{name}-raised"), &["--nofile=10:4096"], setup);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.child.id())).unwrap();
    let nofile = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(
        nofile.split_whitespace().collect::<Vec<_>>(),
        ["Max", "open", "files", "4096", "4096", "files"],
        "{nofile}"
    );
    assert_scraped(&scrape_from(Ipv4Addr::LOCALHOST, server.addr).expect("no answer"));
}
