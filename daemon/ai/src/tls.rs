//! The TLS set-up every HTTP client of the process shares: rustls with the *ring* crypto
//! provider.
//!
//! reqwest is built without a provider of its own (`rustls-no-provider`): its default,
//! aws-lc-rs, is a large C library whose build took over a minute of each build profile (and
//! CI builds two), for the same TLS 1.2 and 1.3 suites. A client built before any provider is
//! installed would panic, so every client of the daemon comes from [`client_builder`] (or calls
//! [`install_provider`] first, when a library builds it).

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

/// A builder for an HTTP client, with the crypto provider installed.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_provider();
    reqwest::Client::builder()
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
