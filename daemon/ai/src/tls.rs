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
//! (Linux, the BSDs) through [`trust::SystemRoots`], which reads the bundle file first and its
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
pub fn client_builder() -> reqwest::ClientBuilder {
    install_provider();
    trusting_the_system(reqwest::Client::builder())
}

/// A builder for an HTTP client that trusts no certificate, for a server reached over plain
/// HTTP (a local model server): it never verifies one, so the system's root certificates are
/// not read, and an `https` URL reached through it is refused, not trusted.
pub fn plain_http_client_builder() -> reqwest::ClientBuilder {
    install_provider();
    reqwest::Client::builder().tls_certs_only(Vec::new())
}

/// `builder` trusting the system's root certificates through [`trust::SystemRoots`]. With none
/// usable, `builder` as it is: reqwest's verifier then reports that the system has none when
/// the client is built.
#[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
fn trusting_the_system(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    let Some(provider) = rustls::crypto::CryptoProvider::get_default().cloned() else {
        return builder;
    };
    let Some(roots) = trust::SystemRoots::new(trust::Locations::of_this_system(), provider.clone())
    else {
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

/// `builder` as it is: reqwest's verifier asks the platform.
#[cfg(not(all(unix, not(target_vendor = "apple"), not(target_os = "android"))))]
fn trusting_the_system(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_build_with_the_provider_installed() {
        let client = client_builder().build();
        assert!(client.is_ok(), "{client:?}");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
