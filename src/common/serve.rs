//! `--listen ADDR:PORT`: the tools' metrics served to Prometheus at
//! `/metrics`, collected at each scrape.
//!
//! One piece for the three tools: each hands [`serve`] a function that reads
//! the kernel's counters at that moment and appends them to an
//! [`Exposition`]. HTTP is hyper's (HTTP/1.1), on a single-threaded tokio
//! runtime: connections are served side by side, while collections run one
//! at a time on this thread (a scrape reads kernel files for milliseconds),
//! so the collecting function needs no locking and may borrow the tool's
//! state.
//!
//! Limits: a client must send its request header within
//! [`HEADER_TIMEOUT`] (a silent client is closed, others go on), a
//! connection lives at most [`CONNECTION_LIFETIME`], a request header may
//! not exceed [`MAX_REQUEST_BYTES`] (431 or 414 beyond), and at most
//! [`MAX_CONNECTIONS`] are open at once (more are closed at once). Only
//! `GET` and `HEAD` of `/metrics` are answered with metrics; other methods
//! get 405, other paths 404. The server stops within 100 ms of a stop
//! signal.
//!
//! Once listening, a tool says where on standard error, in one line
//! (`iostat-rs: listening on http://127.0.0.1:9101/metrics`), as
//! node_exporter and Prometheus log their address: with port 0 the kernel
//! chose the port, and the line is the only way to learn it.

use std::cell::Cell;
use std::convert::Infallible;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{mpsc, oneshot};

use super::expo::{Exposition, Family, Kind};
use super::signals::StopSignal;

/// Time a client has to send a complete request header.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest a connection is kept, kept-alive scrapes included.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(120);
/// Largest request header read (request line included): hyper's minimum.
pub const MAX_REQUEST_BYTES: usize = 8192;
/// Most connections open at once.
pub const MAX_CONNECTIONS: usize = 64;

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
    help: "Time this scrape took to read the kernel's counters.",
};
const SUCCESS: Family = Family {
    name: "hwstat_scrape_success",
    kind: Kind::Gauge,
    help: "1 when this scrape read every counter, 0 when it failed (see hwstat_scrape_errors_total).",
};
const ERRORS: Family = Family {
    name: "hwstat_scrape_errors_total",
    kind: Kind::Counter,
    help: "Scrapes that failed since the server started, by cause.",
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
                eprintln!(
                    "{}: scrape failed: {}",
                    self.tool,
                    super::escape::text(&err.message)
                );
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

/// Serves one connection within the limits, then counts it closed.
async fn connection(
    stream: tokio::net::TcpStream,
    scrapes: mpsc::Sender<oneshot::Sender<Bytes>>,
    open: Rc<Cell<usize>>,
) {
    let service = service_fn(move |request| answer(request, scrapes.clone()));
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_REQUEST_BYTES)
        .serve_connection(TokioIo::new(stream), service);
    let _ = tokio::time::timeout(CONNECTION_LIFETIME, served).await;
    open.set(open.get() - 1);
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
    // Standard error may be closed: the server runs without the line.
    let _ = writeln!(
        io::stderr().lock(),
        "{tool}: listening on http://{addr}/metrics"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let mut own = SelfMetrics {
        tool,
        errors: causes.iter().map(|&c| (c, 0)).collect(),
    };
    local.block_on(&runtime, async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let (scrapes, mut asked) = mpsc::channel::<oneshot::Sender<Bytes>>(MAX_CONNECTIONS);
        let open = Rc::new(Cell::new(0usize));
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) if open.get() < MAX_CONNECTIONS => {
                        open.set(open.get() + 1);
                        tokio::task::spawn_local(connection(stream, scrapes.clone(), Rc::clone(&open)));
                    }
                    // Too many connections: this one is closed at once.
                    Ok(_) => {}
                    // Out of descriptors or a connection reset before
                    // accept: wait a little rather than spin.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                },
                Some(reply) = asked.recv() => {
                    let _ = reply.send(Bytes::from(own.scrape(collect)));
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
