//! `--listen ADDR:PORT`: the tools' metrics served to Prometheus at
//! `/metrics`, collected at each scrape.
//!
//! One piece for the three tools: each hands [`serve`] a function that reads
//! the kernel's counters at that moment and appends them to an
//! [`Exposition`]. HTTP is hyper's (HTTP/1.1), on a single-threaded tokio
//! runtime: connections are served side by side, while collections run one
//! at a time on this thread (a scrape reads kernel files for milliseconds),
//! so the collecting function needs no locking and may borrow the tool's
//! state. A collection answers every request waiting when it begins, so
//! a scrape waits for at most two however many clients ask.
//!
//! Limits: a client must send its request header within
//! [`HEADER_TIMEOUT`] (a silent client is closed, others go on), a
//! response that the client takes none of for [`WRITE_TIMEOUT`] closes its
//! connection (a client that sends requests and never reads the answers
//! holds its place that long, not for the connection's lifetime), the first
//! answer after [`CONNECTION_LIFETIME`] closes the connection (`Connection:
//! close`, so no request the client sent meanwhile is lost), as does the
//! answer to a request with a body (none is read), a request header may
//! not exceed [`MAX_REQUEST_BYTES`] (431 beyond: hyper's buffer limit comes
//! before its check of the target's length, 414), and at most
//! [`MAX_CONNECTIONS`] are open at once, [`MAX_CONNECTIONS_PER_PEER`] of
//! them from one peer (an IPv4 address, an IPv6 /64). A connection beyond
//! these takes the place of the one that has waited longest on its client
//! (its own peer's, when that peer has its share), so that clients that
//! connect and stay silent or never read cannot keep a scraper out (a
//! connection whose request has arrived, unread, from a client that takes
//! its answers is passed over); when every place has a request being
//! answered or arriving, it takes the place of the one that asks most
//! often, if that is more than twice a second (clients that never stop
//! asking), and only when none does is it closed at once. A
//! connection answers
//! one request at a time (hyper reads the next pipelined request once the
//! previous answer is on its way), so it holds at most about one answer in
//! memory. Only
//! `GET` and `HEAD` of `/metrics` are answered with metrics; other methods
//! get 405, other paths 404. The server stops within 100 ms of a stop
//! signal.
//!
//! Once listening, a tool says where on standard error, in one line
//! (`iostat-rs: listening on http://127.0.0.1:9101/metrics`), as
//! node_exporter and Prometheus log their address: with port 0 the kernel
//! chose the port, and the line is the only way to learn it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener};
use std::os::unix::io::{AsRawFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Body, Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{mpsc, oneshot};

use super::expo::{Exposition, Family, Kind};
use super::signals::StopSignal;

/// Time a client has to send a complete request header.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Age after which a connection's next answer is its last (kept-alive
/// scrapes included).
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(120);
/// Largest request header read (request line included): hyper's minimum.
pub const MAX_REQUEST_BYTES: usize = 8192;
/// Most connections open at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Most connections open at once from one peer (an IPv4 address, an IPv6
/// /64): half of [`MAX_CONNECTIONS`], so that one host cannot hold every
/// place, while a host that scrapes side by side (the tests open 17 at
/// once) or a proxy that every scraper comes through still has room.
pub const MAX_CONNECTIONS_PER_PEER: usize = MAX_CONNECTIONS / 2;
/// Descriptors kept for what a scrape opens besides the connections (the
/// kernel files a collection reads, kept open or opened one at a time, a
/// directory listing): under a tight open-file limit the connections get
/// only what is left (see [`connection_room`]).
const SCRAPE_DESCRIPTORS: usize = 6;
/// Longest a response may wait without the client taking any of it (the
/// kernel's send buffer full): the connection is then closed. As long as
/// [`HEADER_TIMEOUT`]: a client that reads nothing for 5 s is as stuck as
/// one that sends nothing.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Requests a second ([`Open::request_rate`]) above which a connection
/// whose request is being answered may still give its place to a newcomer
/// (see [`Slots::victim`]): what a scraper asking every second reaches
/// on its second request, and never passes.
const MAX_REQUEST_RATE: f64 = 2.0;

/// The content type of the text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Why a collection failed, counted in `hwstat_scrape_errors_total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrapeError {
    /// One of the causes given to [`serve`] (a label value).
    pub cause: &'static str,
    /// One line for standard error.
    pub message: String,
}

const DURATION: Family = Family {
    name: "hwstat_scrape_duration_seconds",
    kind: Kind::Gauge,
    help: "Time the collection that answered this scrape took to read the kernel's counters.",
};
const SUCCESS: Family = Family {
    name: "hwstat_scrape_success",
    kind: Kind::Gauge,
    help: "1 when the collection that answered this scrape read every counter, 0 when it failed (see hwstat_scrape_errors_total).",
};
const ERRORS: Family = Family {
    name: "hwstat_scrape_errors_total",
    kind: Kind::Counter,
    help: "Collections that failed since the server started, by cause.",
};
const BUILD_INFO: Family = Family {
    name: "hwstat_build_info",
    kind: Kind::Gauge,
    help: "Always 1: the tool and its version.",
};

/// The server's own metrics, kept between scrapes.
struct SelfMetrics {
    tool: &'static str,
    errors: Vec<(&'static str, u64)>,
}

impl SelfMetrics {
    /// Collects once and returns the whole exposition: the tool's families
    /// (none when collection failed), then the server's own.
    fn scrape(
        &mut self,
        collect: &mut dyn FnMut(&mut Exposition) -> Result<(), ScrapeError>,
    ) -> String {
        let start = Instant::now();
        let mut e = Exposition::new();
        let result = collect(&mut e);
        let took = start.elapsed().as_secs_f64();
        let ok = result.is_ok();
        let mut e = match result {
            Ok(()) => e,
            Err(err) => {
                super::stderr::print(format_args!(
                    "{}: scrape failed: {}\n",
                    self.tool,
                    super::escape::text(&err.message)
                ));
                match self.errors.iter_mut().find(|(c, _)| *c == err.cause) {
                    Some((_, n)) => *n += 1,
                    None => self.errors.push((err.cause, 1)),
                }
                Exposition::new()
            }
        };
        e.family(&DURATION);
        e.sample(&[], took);
        e.family(&SUCCESS);
        e.sample(&[], if ok { 1.0 } else { 0.0 });
        e.family(&ERRORS);
        for (cause, n) in &self.errors {
            e.sample(&[("cause", cause)], *n as f64);
        }
        e.family(&BUILD_INFO);
        e.sample(
            &[("tool", self.tool), ("version", env!("CARGO_PKG_VERSION"))],
            1.0,
        );
        e.into_string()
    }
}

/// Binds exactly `addr` (no other address, no name lookup). Binding before
/// anything else is changed lets a tool fail early on a port in use.
pub fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::bind(addr)
        .map_err(|err| io::Error::new(err.kind(), format!("--listen {addr}: {err}")))
}

/// A response with a short text body.
fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        "text/plain; charset=utf-8".parse().expect("valid"),
    );
    response
}

/// Answers one request; metrics are asked of the collecting loop.
async fn answer(
    request: Request<Incoming>,
    scrapes: mpsc::Sender<oneshot::Sender<Bytes>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if !names_its_host(&request) {
        return Ok(plain(
            StatusCode::BAD_REQUEST,
            "bad request: an HTTP/1.1 request names its host in one valid Host header\n",
        ));
    }
    if request.uri().path() != "/metrics" {
        return Ok(plain(
            StatusCode::NOT_FOUND,
            "not found: the metrics are at /metrics\n",
        ));
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        response
            .headers_mut()
            .insert(header::ALLOW, "GET, HEAD".parse().expect("valid"));
        return Ok(response);
    }
    let (reply, body) = oneshot::channel();
    let unavailable = || plain(StatusCode::SERVICE_UNAVAILABLE, "stopping\n");
    if scrapes.send(reply).await.is_err() {
        return Ok(unavailable());
    }
    let Ok(body) = body.await else {
        return Ok(unavailable());
    };
    let mut response = Response::new(Full::new(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, CONTENT_TYPE.parse().expect("valid"));
    Ok(response)
}

/// Whether `request` names its host as RFC 9112 (section 3.2) asks, which
/// hyper does not check: in one `Host` header, of a host and maybe a port
/// (empty for a target without one), required of HTTP/1.1 and not of
/// HTTP/1.0. A server must answer any other request with 400.
fn names_its_host<B>(request: &Request<B>) -> bool {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) => request.version() < hyper::Version::HTTP_11,
        (Some(host), None) => host.to_str().is_ok_and(|host| {
            host.is_empty()
                || (!host.contains('@') && host.parse::<hyper::http::uri::Authority>().is_ok())
        }),
        (Some(_), Some(_)) => false,
    }
}

/// The connections open, in all and by peer, and which of them may give
/// their place to a newcomer.
struct Slots {
    /// Most connections open at once: [`MAX_CONNECTIONS`], or fewer when
    /// the open-file limit has no room for that many.
    max: usize,
    /// Most from one peer: half of `max` (at least one).
    max_per_peer: usize,
    /// The next connection's number.
    next: u64,
    /// Connections open, by number.
    open: HashMap<u64, Open>,
    /// Connections open by peer (see [`peer_of`]); peers with none are left out.
    by_peer: HashMap<IpAddr, usize>,
}

/// One open connection as [`Slots`] sees it.
struct Open {
    /// Whose connection it is.
    peer: IpAddr,
    /// Since when it has waited on its client (for a request, or for the
    /// client to take an answer); `None` while a request is being answered.
    waiting_since: Option<Instant>,
    /// Closes the connection when its place is given to a newcomer.
    close: oneshot::Sender<()>,
    /// Its socket, open as long as the connection is listed: to see
    /// whether a request has arrived that hyper has not read yet.
    socket: RawFd,
    /// When it was accepted.
    opened: Instant,
    /// How many of its requests have begun to be answered.
    requests: u64,
}

impl Open {
    /// Requests begun per second of the connection's life, its first
    /// second counted whole: a scraper asking every second has at most two
    /// (n requests in n - 1 seconds), a client that never stops asking
    /// hundreds.
    fn request_rate(&self, now: Instant) -> f64 {
        self.requests as f64 / now.duration_since(self.opened).as_secs_f64().max(1.0)
    }
}

/// One open connection's place, given back when it is dropped.
struct Slot {
    /// The counts this place is part of.
    slots: Rc<RefCell<Slots>>,
    /// Its number.
    id: u64,
}

impl Default for Slots {
    fn default() -> Slots {
        Slots::with_room(MAX_CONNECTIONS)
    }
}

impl Slots {
    /// Places for at most `max` connections (at least one), half of them
    /// from one peer.
    fn with_room(max: usize) -> Slots {
        let max = max.clamp(1, MAX_CONNECTIONS);
        Slots {
            max,
            max_per_peer: (max / 2).max(1),
            next: 0,
            open: HashMap::new(),
            by_peer: HashMap::new(),
        }
    }

    /// A place for a connection from `peer`, and what closes it when its
    /// place is given away. When [`MAX_CONNECTIONS`] are open (fewer under
    /// a tight open-file limit), or `peer` has half as many, a connection
    /// (of `peer`'s own, in the second case) is closed for it, chosen by
    /// [`Slots::victim`]: otherwise clients that connect and stay silent,
    /// never read or never stop asking would keep every scraper out, from
    /// as few as two addresses, as any local user has all of 127/8. A
    /// connection with a request arriving ([`has_a_request_arriving`]) is
    /// not taken for a silent one: a flood of silent connections accepted
    /// right after a scraper's closed it before hyper could read its
    /// request (a quarter of the scrapes failed under 200 such clients).
    /// When no connection may be closed, there is no place (`None`).
    fn take(
        slots: &Rc<RefCell<Slots>>,
        peer: IpAddr,
        socket: RawFd,
    ) -> Option<(Slot, oneshot::Receiver<()>)> {
        let mut all = slots.borrow_mut();
        let from_peer = all.by_peer.get(&peer).copied().unwrap_or(0);
        let full = if from_peer >= all.max_per_peer {
            Some(Some(peer))
        } else if all.open.len() >= all.max {
            Some(None)
        } else {
            None
        };
        let now = Instant::now();
        if let Some(among) = full {
            let victim = all.victim(among, now)?;
            let closed = all.remove(victim).expect("listed");
            let _ = closed.close.send(());
        }
        let id = all.next;
        all.next += 1;
        let (close, closed) = oneshot::channel();
        let open = Open {
            peer,
            waiting_since: Some(now),
            close,
            socket,
            opened: now,
            requests: 0,
        };
        all.open.insert(id, open);
        *all.by_peer.entry(peer).or_insert(0) += 1;
        let slots = Rc::clone(slots);
        Some((Slot { slots, id }, closed))
    }

    /// The connection to close for a newcomer, of peer `among` when given
    /// (else of any): the one that has waited longest on its client, or
    /// when every one has a request being answered or arriving, the one
    /// that asks most often if that is more than [`MAX_REQUEST_RATE`]
    /// times a second. A connection can only stay busy by asking without
    /// pause: clients that pipeline requests (64 connections of `HEAD`
    /// requests, whose tiny answers their kernel takes) held every place
    /// and kept all scrapes out, while a scraper asks once a second at most
    /// and is not the one closed.
    fn victim(&self, among: Option<IpAddr>, now: Instant) -> Option<u64> {
        let eligible = || {
            self.open
                .iter()
                .filter(move |(_, c)| among.is_none_or(|p| c.peer == p))
        };
        let longest_waiting = eligible()
            .filter(|(_, c)| !has_a_request_arriving(c.socket))
            .filter_map(|(&id, c)| Some((c.waiting_since?, id)))
            .min()
            .map(|(_, id)| id);
        let asking_most = || {
            eligible()
                .map(|(&id, c)| (c.request_rate(now), id))
                .filter(|&(rate, _)| rate > MAX_REQUEST_RATE)
                .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
                .map(|(_, id)| id)
        };
        longest_waiting.or_else(asking_most)
    }

    /// Forgets connection `id`, if open: its place is free.
    fn remove(&mut self, id: u64) -> Option<Open> {
        let gone = self.open.remove(&id)?;
        if let Some(n) = self.by_peer.get_mut(&gone.peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.by_peer.remove(&gone.peer);
            }
        }
        Some(gone)
    }
}

/// Whether a request has arrived on `socket` that hyper has not read yet,
/// from a client that takes its answers: bytes wait to be read, and none
/// to be sent or acknowledged (`TIOCOUTQ` counts both: it tells what the
/// client's kernel took, not what the client read). A client that
/// pipelines requests and never reads has both once its kernel's buffer
/// is full (its requests wait behind an answer it does not take): it
/// still gives its place.
fn has_a_request_arriving(socket: RawFd) -> bool {
    let queued = |request| {
        let mut bytes: libc::c_int = 0;
        // SAFETY: FIONREAD and TIOCOUTQ (SIOCOUTQ for a socket) write one
        // int through the pointer; a descriptor that is not a socket only
        // fails the call.
        let asked = unsafe { libc::ioctl(socket, request, &mut bytes) };
        (asked == 0).then_some(bytes)
    };
    queued(libc::FIONREAD).is_some_and(|unread| unread > 0)
        && queued(libc::TIOCOUTQ).is_some_and(|unsent| unsent == 0)
}

impl Slot {
    /// Marks a request being answered (`false`) or the connection waiting
    /// on its client again (`true`).
    fn set_waiting(&self, waiting: bool) {
        if let Some(open) = self.slots.borrow_mut().open.get_mut(&self.id) {
            open.waiting_since = waiting.then(Instant::now);
            open.requests += u64::from(!waiting);
        }
    }
}

impl Drop for Slot {
    /// Counts the connection closed (unless its place was given away).
    fn drop(&mut self) {
        self.slots.borrow_mut().remove(self.id);
    }
}

/// How many connections the open-file limit (`ulimit -n`) leaves room
/// for: [`MAX_CONNECTIONS`], or what the soft limit leaves once the
/// descriptors open now and [`SCRAPE_DESCRIPTORS`] are counted. Past it,
/// `accept` fails with EMFILE and leaves the newcomer in the kernel's
/// queue, where no place is given to it: silent clients holding every
/// descriptor would keep scrapers out for as long as they reconnect, and
/// leave the scrapes none to read the kernel with.
///
/// The descriptors open are those `/proc/self/fd` lists, or without
/// `/proc` those [`open_descriptors_probed`] finds. A soft limit short of
/// [`MAX_CONNECTIONS`] is first raised to the hard one, as `--latency`
/// and perf stat raise it. A limit that leaves no room
/// at all is an error: the server could never answer.
fn connection_room() -> io::Result<usize> {
    let limit = || super::fdlimit::soft().map(|s| usize::try_from(s).unwrap_or(usize::MAX));
    let Some(soft) = limit() else {
        return Ok(MAX_CONNECTIONS);
    };
    let open = open_descriptors(
        std::fs::read_dir("/proc/self/fd").map(Iterator::count),
        soft,
    );
    let kept = open.saturating_add(SCRAPE_DESCRIPTORS);
    super::fdlimit::raise_to_hard_below(kept.saturating_add(MAX_CONNECTIONS) as u64);
    let soft = limit().unwrap_or(soft);
    match soft.saturating_sub(kept) {
        0 => Err(io::Error::other(format!(
            "the open-file limit ({soft}) leaves no descriptor for a connection beside the \
             {open} open and {SCRAPE_DESCRIPTORS} kept for a scrape's reads: raise it to at \
             least {} (`ulimit -n`)",
            kept.saturating_add(1)
        ))),
        room => Ok(room.min(MAX_CONNECTIONS)),
    }
}

/// How many descriptors are open, from `listing` (how many entries
/// `/proc/self/fd` has, its own descriptor among them: one to spare) under
/// a `soft` open-file limit.
fn open_descriptors(listing: io::Result<usize>, soft: usize) -> usize {
    match listing {
        Ok(count) => count,
        // Not even one descriptor left: the limit is all open.
        Err(err) if err.raw_os_error() == Some(libc::EMFILE) => soft,
        // No /proc (a container, a chroot), or the system's file table full
        // (ENFILE, which says nothing of this process's limit): asked of
        // each descriptor.
        Err(_) => open_descriptors_probed(),
    }
}

/// Descriptors below this are asked about one by one when `/proc` cannot
/// list them ([`open_descriptors_probed`]): a few milliseconds of
/// `fcntl` calls at most.
const PROBED_DESCRIPTORS: u64 = 1 << 16;

/// How many descriptors are open, without `/proc`: each number below the
/// hard open-file limit (which the soft one may be raised to), up to
/// [`PROBED_DESCRIPTORS`], asked with `fcntl(F_GETFD)`. Past that a
/// limit leaves room for every connection unless tens of thousands are
/// open.
fn open_descriptors_probed() -> usize {
    let below =
        super::fdlimit::hard().map_or(PROBED_DESCRIPTORS, |hard| hard.min(PROBED_DESCRIPTORS));
    let below = libc::c_int::try_from(below).unwrap_or(libc::c_int::MAX);
    // SAFETY: F_GETFD reads a descriptor's flags and changes nothing; a
    // number that is not open gives EBADF.
    (0..below)
        .filter(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1)
        .count()
}

/// Failures of `accept` told on standard error, as node_exporter logs
/// them: the first of each kind (errno) at once, then at most one line of
/// that kind a [`ACCEPT_ERROR_QUIET`] with how many came since, so that a
/// server out of descriptors (which retries every 50 ms) says so without
/// filling a log, even when failures of two kinds alternate.
#[derive(Debug, Default)]
struct AcceptErrors {
    /// Per kind told: its errno, when its last line was told, and its
    /// failures not told since.
    told: Vec<(Option<i32>, Instant, u64)>,
}

/// Time between two lines about `accept` failures of the same kind.
const ACCEPT_ERROR_QUIET: Duration = Duration::from_secs(60);

impl AcceptErrors {
    /// The line to tell for `err`, met at `now`, if one is due.
    fn note(&mut self, tool: &str, err: &io::Error, now: Instant) -> Option<String> {
        let errno = err.raw_os_error();
        let untold = match self.told.iter_mut().find(|(e, ..)| *e == errno) {
            Some((_, at, untold)) if now.duration_since(*at) < ACCEPT_ERROR_QUIET => {
                *untold += 1;
                return None;
            }
            Some((_, at, untold)) => {
                *at = now;
                std::mem::take(untold)
            }
            None => {
                self.told.push((errno, now, 0));
                0
            }
        };
        let mut line = format!("{tool}: cannot accept a connection: {err}");
        if super::source::is_out_of_descriptors(err) {
            line = format!("{line}: {}", super::source::descriptor_advice(err));
        }
        if untold > 0 {
            line = format!("{line} ({untold} more failures since the last line)");
        }
        Some(line)
    }
}

/// The peer a connection from `addr` counts against: its IPv4 address
/// (also when it arrives mapped into IPv6), or its IPv6 /64, the block a
/// host usually has to itself and picks addresses from at will.
fn peer_of(addr: SocketAddr) -> IpAddr {
    match addr.ip().to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & (u128::MAX << 64))),
        v4 => v4,
    }
}

/// A connection's socket whose writes fail with `TimedOut` once they have
/// waited [`WRITE_TIMEOUT`] without progress: hyper then drops the
/// connection, and the socket is reset rather than closed, so that the
/// kernel also drops what it still holds for the client (on loopback, with
/// its 64 kB segments, up to megabytes). Reads pass through (hyper times
/// the request header itself).
struct WriteDeadline {
    /// The connection's socket.
    inner: tokio::net::TcpStream,
    /// When the waiting write gives up; set when a write starts waiting.
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// Whether the last write attempt was left waiting (the deadline runs).
    waiting: bool,
}

impl WriteDeadline {
    /// `inner` with no write waiting yet.
    fn new(inner: tokio::net::TcpStream) -> Self {
        WriteDeadline {
            inner,
            deadline: Box::pin(tokio::time::sleep(WRITE_TIMEOUT)),
            waiting: false,
        }
    }

    /// What a write attempt gave, against the deadline: any result is
    /// progress and stops it, the first wait starts it, and a wait past it
    /// is a `TimedOut` error. The deadline's timer wakes the task, so a
    /// write left waiting is tried again when it expires.
    fn progress<T>(
        &mut self,
        cx: &mut Context<'_>,
        attempt: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if attempt.is_ready() {
            self.waiting = false;
            return attempt;
        }
        if !self.waiting {
            self.waiting = true;
            let due = tokio::time::Instant::now() + WRITE_TIMEOUT;
            self.deadline.as_mut().reset(due);
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                // Reset on close; if that fails, the close is an ordinary one.
                let _ = self.inner.set_zero_linger();
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client took none of the response",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for WriteDeadline {
    /// Reads from the stream as it is.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteDeadline {
    /// Writes `buf`, within the deadline.
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let attempt = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.progress(cx, attempt)
    }

    /// Writes from `bufs` (hyper's queued header and body), within the
    /// deadline.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let attempt = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.progress(cx, attempt)
    }

    /// As the stream: a socket writes vectors in one call.
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    /// Flushes, within the deadline.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let attempt = Pin::new(&mut this.inner).poll_flush(cx);
        this.progress(cx, attempt)
    }

    /// Shuts the writing side down, within the deadline.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let attempt = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.progress(cx, attempt)
    }
}

/// Whether `request` carries a body (a length above 0, or chunks). No
/// answer reads one, so hyper ends the connection after the answer unless
/// the body happened to arrive whole with the header: the answer must say
/// so (`Connection: close`), or the client sends its next request into a
/// closed connection and loses it.
fn carries_body(request: &Request<Incoming>) -> bool {
    !request.body().is_end_stream()
}

/// Serves one connection within the limits until it ends or its place is
/// given away (`closed`), then gives its `slot` back. The first answer
/// after [`CONNECTION_LIFETIME`], and the answer to a request with a body
/// ([`carries_body`]), say `Connection: close` and end it:
/// closing it between requests instead would lose a request the client
/// sent meanwhile. A connection with no request then ends within
/// [`HEADER_TIMEOUT`], one whose client stopped reading within
/// [`WRITE_TIMEOUT`]; past both it is dropped.
async fn connection(
    stream: tokio::net::TcpStream,
    scrapes: mpsc::Sender<oneshot::Sender<Bytes>>,
    slot: Slot,
    closed: oneshot::Receiver<()>,
) {
    let opened = Instant::now();
    let slot = Rc::new(slot);
    let marks = Rc::clone(&slot);
    let service = service_fn(move |request: Request<Incoming>| {
        let (marks, scrapes) = (Rc::clone(&marks), scrapes.clone());
        marks.set_waiting(false);
        let last = carries_body(&request);
        async move {
            let mut answered = answer(request, scrapes).await;
            if (last || opened.elapsed() >= CONNECTION_LIFETIME)
                && let Ok(response) = &mut answered
            {
                let close = header::HeaderValue::from_static("close");
                response.headers_mut().insert(header::CONNECTION, close);
            }
            marks.set_waiting(true);
            answered
        }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_REQUEST_BYTES)
        .serve_connection(TokioIo::new(WriteDeadline::new(stream)), service);
    let last_call = CONNECTION_LIFETIME + HEADER_TIMEOUT + WRITE_TIMEOUT;
    tokio::select! {
        _ = served => {}
        _ = closed => {}
        _ = tokio::time::sleep(last_call) => {}
    }
}

/// Serves `/metrics` on `listener` until a stop signal: each scrape calls
/// `collect`, and the server's own metrics (scrape duration, success,
/// errors by cause, build info) are appended. `causes` are the error causes
/// counted from the start (at 0), so their series exist before a failure.
pub fn serve(
    listener: TcpListener,
    tool: &'static str,
    causes: &[&'static str],
    stop: &StopSignal,
    collect: &mut dyn FnMut(&mut Exposition) -> Result<(), ScrapeError>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    // The runtime's descriptors are open before the room is counted, and
    // the line below is said only of a server that can answer.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|err| {
            if super::source::is_out_of_descriptors(&err) {
                io::Error::other(format!("{err}: {}", super::source::descriptor_advice(&err)))
            } else {
                err
            }
        })?;
    let room = connection_room()?;
    // Standard error may be closed: the server runs without the line.
    let _ = writeln!(
        io::stderr().lock(),
        "{tool}: listening on http://{addr}/metrics"
    );
    let local = tokio::task::LocalSet::new();
    let mut own = SelfMetrics {
        tool,
        errors: causes.iter().map(|&c| (c, 0)).collect(),
    };
    local.block_on(&runtime, async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let (scrapes, mut asked) = mpsc::channel::<oneshot::Sender<Bytes>>(MAX_CONNECTIONS);
        let slots = Rc::new(RefCell::new(Slots::with_room(room)));
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let mut accept_errors = AcceptErrors::default();
        let mut waiting = Vec::with_capacity(MAX_CONNECTIONS);
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, from)) => {
                        // Without a place the connection is closed at once.
                        let socket = stream.as_raw_fd();
                        if let Some((slot, closed)) = Slots::take(&slots, peer_of(from), socket) {
                            let scrapes = scrapes.clone();
                            tokio::task::spawn_local(connection(stream, scrapes, slot, closed));
                        }
                    }
                    // Out of descriptors or a connection reset before
                    // accept: wait a little rather than spin.
                    Err(err) => {
                        if let Some(line) = accept_errors.note(tool, &err, Instant::now()) {
                            let _ = writeln!(io::stderr().lock(), "{line}");
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await
                    }
                },
                Some(reply) = asked.recv() => {
                    // Every request waiting when a collection begins is
                    // answered by it: each answer is still read after its
                    // request came, and a scrape waits for at most two
                    // collections, however many connections ask.
                    waiting.push(reply);
                    while let Ok(reply) = asked.try_recv() {
                        waiting.push(reply);
                    }
                    let body = Bytes::from(own.scrape(collect));
                    for reply in waiting.drain(..) {
                        let _ = reply.send(body.clone());
                    }
                }
                _ = tick.tick() => {
                    if stop.caught().is_some() {
                        return Ok(());
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_an_ipv4_address_or_an_ipv6_64() {
        let at = |s: &str| peer_of(s.parse().unwrap());
        assert_eq!(at("192.0.2.7:1000"), at("192.0.2.7:2000"));
        assert_ne!(at("192.0.2.7:1000"), at("192.0.2.8:1000"));
        // An IPv4 client of a dual-stack socket is its IPv4 address.
        assert_eq!(at("[::ffff:192.0.2.7]:1"), at("192.0.2.7:1"));
        // One /64, whatever the interface identifier; another /64 apart.
        assert_eq!(at("[2001:db8:1:2::1]:1"), at("[2001:db8:1:2:ffff::9]:1"));
        assert_eq!(
            at("[2001:db8:1:2::1]:1"),
            "2001:db8:1:2::".parse::<IpAddr>().unwrap()
        );
        assert_ne!(at("[2001:db8:1:2::1]:1"), at("[2001:db8:1:3::1]:1"));
    }

    #[test]
    fn accept_failures_are_told_once_a_minute_per_kind() {
        let mut errors = AcceptErrors::default();
        let start = Instant::now();
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        let at = |s: u64| start + Duration::from_secs(s);
        assert_eq!(
            errors.note("iostat-rs", &emfile, at(0)).as_deref(),
            Some(
                "iostat-rs: cannot accept a connection: Too many open files (os error 24): \
                 raise the open-file limit (`ulimit -n`)"
            )
        );
        assert_eq!(errors.note("iostat-rs", &emfile, at(1)), None);
        assert_eq!(errors.note("iostat-rs", &emfile, at(59)), None);
        let line = errors.note("iostat-rs", &emfile, at(60)).unwrap();
        assert!(
            line.ends_with(" (2 more failures since the last line)"),
            "{line}"
        );
        // Another kind is told at once.
        let aborted = io::Error::from_raw_os_error(libc::ECONNABORTED);
        assert_eq!(
            errors.note("iostat-rs", &aborted, at(61)).as_deref(),
            Some(
                "iostat-rs: cannot accept a connection: Software caused connection abort (os error 103)"
            )
        );
        // Kinds that alternate are each kept quiet for their minute.
        for s in 62..119 {
            assert_eq!(errors.note("iostat-rs", &emfile, at(s)), None, "{s}");
            assert_eq!(errors.note("iostat-rs", &aborted, at(s)), None, "{s}");
        }
        let line = errors.note("iostat-rs", &emfile, at(120)).unwrap();
        assert!(
            line.ends_with(" (57 more failures since the last line)"),
            "{line}"
        );
    }

    #[test]
    fn a_full_system_file_table_is_not_taken_for_a_full_limit() {
        let open = |errno| open_descriptors(Err(io::Error::from_raw_os_error(errno)), 1000);
        assert_eq!(open(libc::EMFILE), 1000);
        // Probed instead: standard input, output and error at least, far
        // below the limit.
        for errno in [libc::ENFILE, libc::ENOENT] {
            assert!((3..1000).contains(&open(errno)), "{errno}");
        }
        assert_eq!(open_descriptors(Ok(7), 1000), 7);
    }

    #[test]
    fn a_full_server_closes_the_connection_waiting_longest_for_a_newcomer() {
        let slots = Rc::new(RefCell::new(Slots::default()));
        let peer = |i: u8| IpAddr::from([192, 0, 2, i]);
        // Each connection's socket: a pair, of which the test writes into
        // the other end what its client sends.
        let sockets = RefCell::new(Vec::new());
        let take = |p: IpAddr| {
            let pair = std::os::unix::net::UnixStream::pair().unwrap();
            let taken = Slots::take(&slots, p, pair.0.as_raw_fd());
            sockets.borrow_mut().push(pair);
            taken
        };
        // One peer's share, all waiting on their clients.
        let mut greedy: Vec<_> = (0..MAX_CONNECTIONS_PER_PEER)
            .map(|_| take(peer(1)).unwrap())
            .collect();
        // One more from that peer closes the first of them.
        let newest = take(peer(1)).unwrap();
        assert_eq!(greedy[0].1.try_recv(), Ok(()));
        assert!(greedy[1..].iter_mut().all(|g| g.1.try_recv().is_err()));
        assert_eq!(slots.borrow().by_peer[&peer(1)], MAX_CONNECTIONS_PER_PEER);
        // A request being answered (the first its connection asked) is not
        // closed: with every place of the peer answering one, the newcomer
        // is refused.
        for (slot, _) in &greedy[1..] {
            slot.set_waiting(false);
        }
        newest.0.set_waiting(false);
        assert!(take(peer(1)).is_none());
        // The others fill the server; a new peer then closes the
        // connection waiting longest of all, of whichever peer.
        let mut others: Vec<_> = (0..MAX_CONNECTIONS - MAX_CONNECTIONS_PER_PEER)
            .map(|i| take(peer(2 + (i % 8) as u8)).unwrap())
            .collect();
        assert_eq!(slots.borrow().open.len(), MAX_CONNECTIONS);
        let _late = take(peer(100)).unwrap();
        assert_eq!(others[0].1.try_recv(), Ok(()));
        assert_eq!(slots.borrow().open.len(), MAX_CONNECTIONS);
        // A connection whose request has arrived, not read yet, is passed
        // over: the next waiting longest is closed.
        // (The peer's share, the newest, the one refused, then the others.)
        let second = MAX_CONNECTIONS_PER_PEER + 3;
        std::io::Write::write_all(&mut &sockets.borrow()[second].1, b"GET /").unwrap();
        let _later = take(peer(101)).unwrap();
        assert!(others[1].1.try_recv().is_err());
        assert_eq!(others[2].1.try_recv(), Ok(()));
        // Everything given back, the given-away places counted once.
        drop((_late, _later));
        drop(newest);
        drop(greedy);
        drop(others);
        assert!(slots.borrow().open.is_empty());
        assert!(slots.borrow().by_peer.is_empty());
    }

    #[test]
    fn with_every_request_being_answered_the_connection_asking_most_gives_way() {
        let slots = Rc::new(RefCell::new(Slots::with_room(4)));
        let peer = |i: u8| IpAddr::from([192, 0, 2, i]);
        let pair = std::os::unix::net::UnixStream::pair().unwrap();
        let mut taken: Vec<_> = [1, 1, 2, 2]
            .into_iter()
            .map(|p| Slots::take(&slots, peer(p), pair.0.as_raw_fd()).unwrap())
            .collect();
        // Every one answering a request, having asked 2, 3, 10 and 8 times
        // in their first second (rates of that many a second): the first
        // as a scraper asking every second has after its second request,
        // the most it reaches, the second a client asking a little more.
        for (slot, asked) in taken.iter().map(|t| &t.0).zip([2, 3, 10, 8]) {
            for _ in 0..asked {
                slot.set_waiting(true);
                slot.set_waiting(false);
            }
        }
        // A newcomer from another peer closes the one asking most.
        let newcomer = Slots::take(&slots, peer(3), pair.0.as_raw_fd()).unwrap();
        assert_eq!(taken[2].1.try_recv(), Ok(()));
        assert!([0, 1, 3].iter().all(|&i| taken[i].1.try_recv().is_err()));
        // One from a peer with its share closes its own that asks most.
        let own = Slots::take(&slots, peer(1), pair.0.as_raw_fd()).unwrap();
        assert_eq!(taken[1].1.try_recv(), Ok(()));
        // Connections asking twice a second or less (the first, and the
        // two just let in) are never closed for another: a scraper's
        // request being answered is not cut.
        newcomer.0.set_waiting(false);
        own.0.set_waiting(false);
        assert!(Slots::take(&slots, peer(1), pair.0.as_raw_fd()).is_none());
        let fourth = Slots::take(&slots, peer(4), pair.0.as_raw_fd()).unwrap();
        assert_eq!(taken[3].1.try_recv(), Ok(()));
        fourth.0.set_waiting(false);
        assert!(Slots::take(&slots, peer(5), pair.0.as_raw_fd()).is_none());
        // A connection waiting on its client goes first, however seldom it
        // asked.
        taken[0].0.set_waiting(true);
        let _last = Slots::take(&slots, peer(6), pair.0.as_raw_fd()).unwrap();
        assert_eq!(taken[0].1.try_recv(), Ok(()));
    }

    #[test]
    fn self_metrics_count_failures_by_cause_and_drop_partial_output() {
        let mut own = SelfMetrics {
            tool: "demo",
            errors: vec![("read", 0)],
        };
        let mut fail = |e: &mut Exposition| {
            e.family(&DURATION);
            Err(ScrapeError {
                cause: "read",
                message: "x".into(),
            })
        };
        own.scrape(&mut fail);
        let text = own.scrape(&mut fail);
        assert!(
            text.contains("hwstat_scrape_errors_total{cause=\"read\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("hwstat_scrape_success 0\n"), "{text}");
        assert_eq!(
            text.matches("# TYPE hwstat_scrape_duration_seconds")
                .count(),
            1
        );
        let text = own.scrape(&mut |_| Ok(()));
        assert!(text.contains("hwstat_scrape_success 1\n"), "{text}");
        assert!(text.contains(&format!(
            "hwstat_build_info{{tool=\"demo\",version=\"{}\"}} 1\n",
            env!("CARGO_PKG_VERSION")
        )));
    }
}
