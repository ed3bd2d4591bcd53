//! The AWS SDK's HTTP client, ours: HTTP/1.1 only, over rustls with the one crypto provider the
//! binaries already link, one connection pool per connect timeout (docs/architecture.md, "How a function is
//! wired").
//!
//! The SDK's own (`default-https-client`) always builds hyper with HTTP/2 and h2, which the AWS
//! endpoints a function calls (DynamoDB, SQS, EventBridge, KMS, Secrets Manager, the WebSocket
//! management API) do not need: they speak HTTP/1.1. Leaving h2 out is most of what this saves
//! (README, "Deploying with SAM"). What the SDK asks of a client, this does: it honours the connect
//! timeout of the settings it is handed, keeps connections in a pool (one per connect timeout,
//! as the settings do not change within a client), and tells the retry strategy which failures
//! are transient: I/O, a refused or dropped connection, a connection closed by the peer before
//! its answer, and timeouts. The read timeout is left to the operation-attempt timeout the
//! functions set (`app::wiring::budgeted`).
use std::collections::HashMap;
use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::retry::ErrorKind;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::client::legacy::Client as Pool;

/// The client for every SDK client of a process: TLS with the system's roots (and `extra_root`,
/// a DER certificate, for the tests' own TLS peer), plain HTTP for a local endpoint. The system's
/// roots are read here, at a function's start, as the SDK's own client does: its connection
/// pools are made at the first request, which would otherwise pay for them (4.8 ms in a release
/// build on the machine of README "Benchmarks", once per process).
pub fn client(extra_root: Option<Vec<u8>>) -> SharedHttpClient {
    super::https::load_system_roots();
    SharedHttpClient::new(Client { extra_root, pools: Mutex::default() })
}

#[derive(Debug)]
struct Client {
    extra_root: Option<Vec<u8>>,
    pools: Mutex<HashMap<Option<Duration>, SharedHttpConnector>>,
}

impl HttpClient for Client {
    fn http_connector(&self, settings: &HttpConnectorSettings, _: &RuntimeComponents) -> SharedHttpConnector {
        let key = settings.connect_timeout();
        let mut pools = self.pools.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pools
            .entry(key)
            .or_insert_with(|| match connector(key, self.extra_root.as_deref()) {
                Ok(pool) => SharedHttpConnector::new(pool),
                Err(e) => SharedHttpConnector::new(Unusable(Arc::new(e))),
            })
            .clone()
    }
}

/// One pool of HTTP/1.1 connections, TLS or plain by the request's scheme.
#[derive(Debug, Clone)]
struct Connector(Pool<HttpsConnector<TcpConnector>, SdkBody>);

fn connector(connect_timeout: Option<Duration>, extra_root: Option<&[u8]>) -> std::io::Result<Connector> {
    Ok(Connector(super::https::pool(super::https::connector(connect_timeout, extra_root)?)))
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let request = match request.try_into_http1x() {
            Ok(r) => r,
            Err(e) => return HttpConnectorFuture::ready(Err(ConnectorError::user(e.into()))),
        };
        let answer = self.0.request(request);
        HttpConnectorFuture::new(async move {
            match answer.await {
                Ok(r) => {
                    Response::try_from(r.map(SdkBody::from_body_1_x)).map_err(|e| ConnectorError::other(e.into(), None))
                }
                Err(e) => Err(classify(e)),
            }
        })
    }
}

/// Which failures the SDK's retry strategy may retry: anything that ends in an I/O error or a
/// failed connect, a connection closed or cancelled under the request, and a timeout are
/// transient; so is a message cut short (an idle connection the peer closed as it was reused).
/// Anything else is reported as it is and not retried.
fn classify(e: hyper_util::client::legacy::Error) -> ConnectorError {
    let hyper = source::<hyper::Error>(&e);
    if hyper.is_some_and(hyper::Error::is_timeout) || source::<std::io::Error>(&e).is_some_and(timed_out) {
        return ConnectorError::timeout(e.into());
    }
    if hyper.is_some_and(hyper::Error::is_incomplete_message) {
        return ConnectorError::other(e.into(), Some(ErrorKind::TransientError));
    }
    if e.is_connect()
        || hyper.is_some_and(|h| h.is_closed() || h.is_canceled())
        || source::<std::io::Error>(&e).is_some()
    {
        return ConnectorError::io(e.into());
    }
    if hyper.is_some_and(hyper::Error::is_user) {
        return ConnectorError::user(e.into());
    }
    ConnectorError::other(e.into(), None)
}

fn timed_out(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
}

/// The first error of type `E` in `e`'s chain of sources.
fn source<'a, E: Error + 'static>(e: &'a (dyn Error + 'static)) -> Option<&'a E> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(found) = err.downcast_ref::<E>() {
            return Some(found);
        }
        next = err.source();
    }
    None
}

/// A client whose TLS could not be set up (a malformed extra root): every request fails with why.
#[derive(Debug)]
struct Unusable(Arc<std::io::Error>);

impl HttpConnector for Unusable {
    fn call(&self, _: HttpRequest) -> HttpConnectorFuture {
        let why = self.0.to_string();
        HttpConnectorFuture::ready(Err(ConnectorError::other(why.into(), None)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const CERT: &[u8] = include_bytes!("../../testdata/localhost.der");
    const KEY: &[u8] = include_bytes!("../../testdata/localhost.key.der");

    /// A TLS peer on localhost that answers every request as DynamoDB answers `ListTables`, and
    /// counts the connections it accepted.
    async fn tls_peer() -> (u16, Arc<AtomicUsize>) {
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![CERT.to_vec().into()], rustls::pki_types::PrivateKeyDer::Pkcs8(KEY.to_vec().into()))
            .unwrap();
        let tls = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        counting_listener(move |tcp| {
            let tls = tls.clone();
            tokio::spawn(async move {
                let Ok(stream) = tls.accept(tcp).await else { return };
                let answer = hyper::service::service_fn(|_req| async {
                    http::Response::builder()
                        .header("content-type", "application/x-amz-json-1.0")
                        .header("x-amzn-requestid", "test")
                        .body(http_body_util::Full::new(&br#"{"TableNames":["holdfast"]}"#[..]))
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, answer).await;
            });
        })
        .await
    }

    /// A loopback listener that counts the connections it accepts and hands each to `serve`.
    async fn counting_listener(serve: impl Fn(tokio::net::TcpStream) + Send + 'static) -> (u16, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                serve(tcp);
            }
        });
        (port, accepted)
    }

    /// A DynamoDB client for `endpoint` through `http`, making at most `attempts` per request.
    fn dynamodb_at(endpoint: String, http: SharedHttpClient, attempts: u32) -> aws_sdk_dynamodb::Client {
        let conf = aws_sdk_dynamodb::Config::builder()
            .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .http_client(http)
            .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_dynamodb::config::Credentials::new("k", "s", None, None, "test"))
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::standard().with_max_attempts(attempts))
            .build();
        aws_sdk_dynamodb::Client::from_conf(conf)
    }

    /// The TLS peer on `port`, two attempts per request.
    fn dynamodb(port: u16, http: SharedHttpClient) -> aws_sdk_dynamodb::Client {
        dynamodb_at(format!("https://localhost:{port}"), http, 2)
    }

    #[test]
    fn the_system_roots_are_read_when_the_client_is_made_not_at_its_first_request() {
        // nextest (`make unit`) runs each test in a process of its own, so nothing read them
        // before; under `cargo test` another test's client may have, which proves nothing here
        let _client = client(None);
        assert!(crate::adapters::https::system_roots_loaded(), "not read when the client was made");
    }

    #[tokio::test]
    async fn speaks_tls_to_a_peer_it_trusts_and_keeps_the_connection_for_the_next_request() {
        let (port, accepted) = tls_peer().await;
        let ddb = dynamodb(port, client(Some(CERT.to_vec())));
        for _ in 0..3 {
            let out = ddb.list_tables().send().await.unwrap();
            assert_eq!(out.table_names(), ["holdfast"]);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "one TLS handshake for three requests");
    }

    #[tokio::test]
    async fn refuses_a_peer_whose_certificate_it_does_not_trust() {
        let (port, accepted) = tls_peer().await;
        let err = dynamodb(port, client(None)).list_tables().send().await.unwrap_err();
        let err = format!("{}", aws_smithy_types::error::display::DisplayErrorContext(&err));
        assert!(err.contains("certificate"), "{err}");
        // a failed handshake is a failed connect, which the SDK retries: both attempts refused
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_malformed_extra_root_fails_every_request_with_why() {
        let err = dynamodb(1, client(Some(b"not a certificate".to_vec()))).list_tables().send().await.unwrap_err();
        let err = format!("{}", aws_smithy_types::error::display::DisplayErrorContext(&err));
        assert!(err.contains("certificate") || err.contains("Der") || err.contains("parse"), "{err}");
    }

    #[tokio::test]
    async fn a_connection_dropped_before_its_answer_is_retried() {
        let (port, accepted) = counting_listener(drop).await;
        let ddb = dynamodb_at(format!("http://127.0.0.1:{port}"), client(None), 3);
        assert!(ddb.list_tables().send().await.is_err());
        assert_eq!(accepted.load(Ordering::SeqCst), 3, "every attempt made");
    }
}
