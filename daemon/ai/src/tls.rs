//! The TLS set-up every HTTP client of the process shares: rustls with the *ring* crypto
//! provider.
//!
//! reqwest is built without a provider of its own (`rustls-no-provider`): its default,
//! aws-lc-rs, is a large C library whose build took over a minute of each build profile (and
//! CI builds two), for the same TLS 1.2 and 1.3 suites. A client built before any provider is
//! installed would panic, so every client of the daemon comes from [`client_builder`] (or calls
//! [`install_provider`] first, when a library builds it), or from [`plain_http_client_builder`]
//! for servers reached over plain HTTP only.
//!
//! The clients trust the system's root certificates: where the system keeps them in PEM files
//! (Linux, the BSDs) through `trust::SystemRoots`, which reads the bundle file first and its
//! directories only when needed; elsewhere through reqwest's default verifier.

#[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
mod trust;

use std::sync::Once;

/// Makes *ring* the process's default crypto provider, once; later calls do nothing. Another
/// provider installed first by the host process is kept.
pub fn install_provider() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // An error means a provider is installed already: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A builder for an HTTP client, with the crypto provider installed, trusting the system's
/// root certificates (the bundle file is read now: under a millisecond).
///
/// Its TLS set-up is made here and handed to reqwest whole, so reqwest's own TLS settings
/// (extra roots, TLS versions, accepting invalid certificates) have no effect on it: a
/// client that needs them starts from `reqwest::Client::builder()` after [`install_provider`].
pub fn client_builder() -> reqwest::ClientBuilder {
    install_provider();
    trusting_the_system(reqwest::Client::builder())
}

/// `builder` trusting the system's root certificates where they are PEM files.
#[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
fn trusting_the_system(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    trusting(builder, trust::Locations::of_this_system())
}

/// `builder` as it is: reqwest's verifier asks the platform.
#[cfg(not(all(unix, not(target_vendor = "apple"), not(target_os = "android"))))]
fn trusting_the_system(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder
}

/// A builder for an HTTP client that trusts no certificate, for a server reached over plain
/// HTTP (a local model server): it never verifies one, so the system's root certificates are
/// not read, and an `https` URL reached through it is refused, not trusted.
pub fn plain_http_client_builder() -> reqwest::ClientBuilder {
    install_provider();
    reqwest::Client::builder().tls_certs_only(Vec::new())
}

/// `builder` trusting the root certificates of `locations` through `trust::SystemRoots`.
/// With none usable, `builder` as it is: reqwest's verifier then reports that the system has
/// none when the client is built.
#[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
fn trusting(
    builder: reqwest::ClientBuilder,
    locations: trust::Locations,
) -> reqwest::ClientBuilder {
    let Some(provider) = rustls::crypto::CryptoProvider::get_default().cloned() else {
        return builder;
    };
    let Some(roots) = trust::SystemRoots::new(locations, provider.clone()) else {
        return builder;
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map(|config| {
            config
                .dangerous()
                .with_custom_certificate_verifier(std::sync::Arc::new(roots))
                .with_no_client_auth()
        });
    match config {
        Ok(mut config) => {
            // What reqwest offers itself, built without HTTP/2.
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            builder.tls_backend_preconfigured(config)
        }
        Err(error) => {
            tracing::warn!(%error, "the TLS set-up failed; reqwest's default is used");
            builder
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TLS server on 127.0.0.1 with a self-signed certificate made for this run, answering
    /// each connection's request with `ok`; its port and certificate (PEM).
    #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
    async fn https_server() -> (u16, String) {
        let (port, cert, _) = counted_https_server().await;
        (port, cert)
    }

    /// [`https_server`], with the number of connections it accepted so far.
    #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
    async fn counted_https_server() -> (u16, String, std::sync::Arc<std::sync::atomic::AtomicUsize>)
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = accepted.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(stream).await else { return };
                    let mut request = [0_u8; 4096];
                    let _ = tls.read(&mut request).await;
                    let answer =
                        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        (port, made.cert.pem(), accepted)
    }

    /// A GET of the server on `port` by a client trusting `bundle` (a file) and `dir` (a
    /// directory) of PEM text: its body, or the error's chain.
    #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
    async fn fetch(port: u16, bundle: &str, dir: &str) -> Result<String, String> {
        let store = tempfile::tempdir().unwrap();
        let (file, certs) = (store.path().join("bundle.crt"), store.path().join("certs"));
        std::fs::create_dir(&certs).unwrap();
        std::fs::write(&file, bundle).unwrap();
        std::fs::write(certs.join("added.pem"), dir).unwrap();
        install_provider();
        let locations = trust::Locations::new(Some(file), vec![certs]);
        let client = trusting(reqwest::Client::builder(), locations).build().unwrap();
        let answer = client.get(format!("https://127.0.0.1:{port}/")).send().await;
        match answer {
            Ok(answer) => Ok(answer.text().await.unwrap()),
            Err(error) => Err(crate::http::error_chain(&error)),
        }
    }

    #[tokio::test]
    #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
    async fn a_server_is_trusted_through_the_bundle_or_the_directories_alone() {
        let (port, cert) = https_server().await;
        let unrelated = include_str!("tls/testdata/other.pem");
        assert_eq!(fetch(port, &cert, unrelated).await.unwrap(), "ok");
        assert_eq!(fetch(port, unrelated, &cert).await.unwrap(), "ok");
        let refused = fetch(port, unrelated, unrelated).await.unwrap_err();
        assert!(refused.contains("UnknownIssuer"), "{refused}");
    }

    #[tokio::test]
    #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
    async fn an_https_connection_opened_ahead_carries_the_first_request() {
        use crate::preconnect::{Opened, Opener};
        let (port, cert, accepted) = counted_https_server().await;
        let store = tempfile::tempdir().unwrap();
        let bundle = store.path().join("bundle.crt");
        std::fs::write(&bundle, cert).unwrap();
        install_provider();
        let opener = Opener::default();
        let locations = trust::Locations::new(Some(bundle), vec![]);
        let client =
            trusting(reqwest::Client::builder(), locations).connector_layer(opener.layer());
        let client = client.build().unwrap();
        let url = format!("https://127.0.0.1:{port}/");
        let opened = opener.open(&client, &url).await;
        assert!(matches!(opened, Opened::Kept), "the handshake was done ahead: {opened:?}");
        // The server's session tickets come after the handshake; they leave it usable.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let answer = client.get(&url).send().await.unwrap();
        assert_eq!(answer.text().await.unwrap(), "ok");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn clients_build_with_the_provider_installed() {
        let client = client_builder().build();
        assert!(client.is_ok(), "{client:?}");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
