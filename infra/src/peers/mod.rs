//! Real HTTP peers the local stack starts beside its API, speaking third parties' documented
//! shapes so the adapters are exercised over the wire (no mocks).

pub mod provider;
pub mod stripe;
pub mod supplier;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What every peer answers.
pub(crate) type Response = hyper::Response<Full<Bytes>>;

/// A free port on 127.0.0.1 and the peer's base URL.
pub(crate) async fn bind() -> anyhow::Result<(TcpListener, String)> {
    // every peer builds a reqwest client (webhooks back to the stack) after binding
    holdfast::adapters::outbound::install_crypto();
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    Ok((listener, url))
}

/// Serves every connection of `listener` over HTTP/1 with `handle`, until `shutdown` changes
/// (without one, until the runtime stops).
pub(crate) fn serve<H, Fut>(
    listener: TcpListener,
    handle: H,
    mut shutdown: Option<watch::Receiver<bool>>,
) -> JoinHandle<()>
where
    H: Fn(hyper::Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let accepted = match shutdown.as_mut() {
                Some(rx) => tokio::select! {
                    _ = rx.changed() => return,
                    accepted = listener.accept() => accepted,
                },
                None => listener.accept().await,
            };
            let Ok((stream, _)) = accepted else { continue };
            let handle = handle.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let answer = handle(req);
                    async move { Ok::<_, std::convert::Infallible>(answer.await) }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    })
}

/// A JSON answer. A body that does not serialise is answered as a 500 naming the error, never
/// as an empty body under the intended status.
pub(crate) fn json(status: u16, v: &impl Serialize) -> Response {
    let (status, body) = match serde_json::to_vec(v) {
        Ok(body) => (status, body),
        Err(e) => {
            (500, serde_json::json!({ "error": format!("the answer does not serialise: {e}") }).to_string().into())
        }
    };
    let mut r = hyper::Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
    r
}

/// A peer's state, even after a panic elsewhere (a test's peer keeps answering).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
