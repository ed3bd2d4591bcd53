//! The HTTP connections of a process, shared by its two clients: the AWS SDK's (`sdk_http`) and
//! the calls to HTTP peers (`outbound`). HTTP/1.1 only, TLS by rustls on ring with the system's
//! roots, pooled (docs/architecture.md, "How a function is wired").
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::client::legacy::Client as Pool;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long an idle pooled connection is kept: under the 350 s after which AWS's load balancers
/// drop one, as the SDK's own client does (90 s).
const IDLE: Duration = Duration::from_secs(90);

/// A pool of connections made by [`connector`], idle ones kept [`IDLE`].
pub fn pool<B>(https: HttpsConnector<TcpConnector>) -> Pool<HttpsConnector<TcpConnector>, B>
where
    B: http_body::Body + Send + 'static + Unpin,
    B::Data: Send,
{
    Pool::builder(TokioExecutor::new()).pool_timer(TokioTimer::new()).pool_idle_timeout(IDLE).build(https)
}

/// Connections for both HTTP clients of a process (`sdk_http`'s and `outbound`'s): HTTP/1.1, TLS on
/// ring with the system's roots (and `extra_root`), plain HTTP where the URL says `http://`.
pub fn connector(
    connect_timeout: Option<Duration>,
    extra_root: Option<&[u8]>,
) -> std::io::Result<HttpsConnector<TcpConnector>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = system_roots().clone();
    if let Some(der) = extra_root {
        roots.add(der.to_vec().into()).map_err(std::io::Error::other)?;
    }
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut tcp = TcpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(connect_timeout);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp))
}

/// Reads the system's CA certificates now if no client has yet (see [`system_roots`]).
pub fn load_system_roots() {
    system_roots();
}

static ROOTS: OnceLock<rustls::RootCertStore> = OnceLock::new();

/// Whether this process has read the system's CA certificates yet.
#[cfg(test)]
pub(crate) fn system_roots_loaded() -> bool {
    ROOTS.get().is_some()
}

/// The system's CA certificates, read once per process: a function builds several clients at
/// start (the SDK's, and one per HTTP peer it calls).
fn system_roots() -> &'static rustls::RootCertStore {
    ROOTS.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        for e in &native.errors {
            tracing::warn!(error = %e, "a system CA certificate could not be read");
        }
        let (added, _) = roots.add_parsable_certificates(native.certs);
        if added == 0 {
            tracing::warn!("no system CA certificates: every TLS connection will be refused");
        }
        roots
    })
}
