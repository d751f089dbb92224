//! Which servers the HTTPS clients trust: those whose certificate chains to one of the system's
//! root certificates, as with reqwest's default verifier, but read in two steps.
//!
//! On Linux and the BSDs the roots are PEM files, read from where OpenSSL reads them: the file
//! of `SSL_CERT_FILE` and the directories of `SSL_CERT_DIR` when either is set, else the bundle
//! file and directories `openssl-probe` finds ([`Locations`]). Reading them all, as
//! `rustls-native-certs` does for reqwest's default verifier, took 2.7 to 4.7 ms here: the
//! directory holds a few hundred links and files (Debian's holds each certificate of the bundle
//! again, under two names), and each is a file system lookup. A cold start paid it before its
//! first request to a hosted provider (docs/benchmarks.md, "Eighteenth pass").
//!
//! So [`SystemRoots`] verifies with the bundle file's roots first (one file, under 1 ms) and
//! reads the directories only when a server's chain does not verify against those: a chain
//! that verifies against some roots verifies against more of them, so a server is trusted
//! exactly when it chains to a root of the file or of a directory, as before; only a server
//! that needs a root found in a directory alone (a certificate added there by hand) waits for
//! the directories, once per client.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The variable naming a PEM file of trusted certificates (as for OpenSSL).
const CERT_FILE_VARIABLE: &str = "SSL_CERT_FILE";
/// The variable naming directories of PEM files of trusted certificates (as for OpenSSL).
const CERT_DIR_VARIABLE: &str = "SSL_CERT_DIR";

/// Where the root certificates are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Locations {
    file: Option<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl Locations {
    /// `file` and `dirs` as they are.
    #[cfg(test)]
    pub(crate) fn new(file: Option<PathBuf>, dirs: Vec<PathBuf>) -> Self {
        Self { file, dirs }
    }

    /// The places of this process's environment, else the system's.
    pub(crate) fn of_this_system() -> Self {
        Self::choose(
            std::env::var_os(CERT_FILE_VARIABLE),
            std::env::var_os(CERT_DIR_VARIABLE),
            || {
                let found = openssl_probe::probe();
                Self { file: found.cert_file, dirs: found.cert_dir }
            },
        )
    }

    /// `file` and the `:`-separated `dirs` when either is set (empty directory entries are
    /// skipped), else what `probe` finds: the rule of `rustls-native-certs`.
    fn choose(
        file: Option<OsString>,
        dirs: Option<OsString>,
        probe: impl FnOnce() -> Self,
    ) -> Self {
        let dirs: Vec<PathBuf> = dirs
            .map(|dirs| {
                std::env::split_paths(&dirs).filter(|d| !d.as_os_str().is_empty()).collect()
            })
            .unwrap_or_default();
        match file {
            None if dirs.is_empty() => probe(),
            file => Self { file: file.map(PathBuf::from), dirs },
        }
    }

    /// The certificates of the file alone.
    fn file_roots(&self) -> Vec<CertificateDer<'static>> {
        match &self.file {
            Some(file) => loaded(rustls_native_certs::load_certs_from_paths(Some(file), None)),
            None => Vec::new(),
        }
    }

    /// The certificates of the file and of every directory (the file is read with the first
    /// directory, so a link to it there, as in Debian's, is not read again).
    fn all_roots(&self) -> Vec<CertificateDer<'static>> {
        let Some((first, others)) = self.dirs.split_first() else { return self.file_roots() };
        let file = self.file.as_deref();
        let mut all = loaded(rustls_native_certs::load_certs_from_paths(file, Some(first)));
        for dir in others {
            all.extend(loaded(rustls_native_certs::load_certs_from_paths(None, Some(dir))));
        }
        all
    }
}

/// The certificates of `result`, its errors logged (as reqwest's default verifier does).
fn loaded(result: rustls_native_certs::CertificateResult) -> Vec<CertificateDer<'static>> {
    for error in &result.errors {
        tracing::warn!(%error, "a root certificate of the system could not be read");
    }
    result.certs
}

/// A verifier of server certificates against the system's roots: those of the bundle file
/// first, all of them when those do not verify a server (see the module's documentation).
#[derive(Debug)]
pub(crate) struct SystemRoots {
    /// Verifies against the roots read first (the file's, or all of them without a file).
    first: Arc<WebPkiServerVerifier>,
    /// Where the rest are, when there is a rest (directories beside a file).
    rest: Option<Locations>,
    /// Verifies against all the roots, made on first need.
    all: OnceLock<Option<Arc<WebPkiServerVerifier>>>,
    provider: Arc<CryptoProvider>,
}

impl SystemRoots {
    /// The verifier for `locations`, or `None` when they hold no usable certificate (reqwest's
    /// default verifier then reports that when the client is built).
    pub(crate) fn new(locations: Locations, provider: Arc<CryptoProvider>) -> Option<Self> {
        let file_first = locations.file.is_some() && !locations.dirs.is_empty();
        let roots = if file_first { locations.file_roots() } else { locations.all_roots() };
        match verifier(roots, &provider) {
            Some(first) => {
                let rest = file_first.then_some(locations);
                Some(Self { first, rest, all: OnceLock::new(), provider })
            }
            // An unusable file beside directories: everything now.
            None if file_first => {
                let first = verifier(locations.all_roots(), &provider)?;
                Some(Self { first, rest: None, all: OnceLock::new(), provider })
            }
            None => None,
        }
    }

    /// The verifier against all the roots, made on the first call; `None` when there is no
    /// rest to read, or it adds nothing usable.
    fn all(&self) -> Option<&WebPkiServerVerifier> {
        let rest = self.rest.as_ref()?;
        self.all.get_or_init(|| verifier(rest.all_roots(), &self.provider)).as_deref()
    }

    /// Whether the rest of the roots was read.
    #[cfg(test)]
    fn read_all(&self) -> bool {
        self.all.get().is_some()
    }
}

/// A webpki verifier trusting the usable ones of `roots`; `None` without any.
fn verifier(
    roots: Vec<CertificateDer<'static>>,
    provider: &Arc<CryptoProvider>,
) -> Option<Arc<WebPkiServerVerifier>> {
    let mut store = RootCertStore::empty();
    let (_, ignored) = store.add_parsable_certificates(roots);
    if ignored > 0 {
        tracing::warn!(ignored, "root certificates of the system ignored: webpki cannot use them");
    }
    if store.is_empty() {
        return None;
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
        .build()
        .inspect_err(|error| tracing::warn!(%error, "no verifier for the system's roots"))
        .ok()
}

impl ServerCertVerifier for SystemRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verify = |verifier: &WebPkiServerVerifier| {
            verifier.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        };
        match verify(&self.first) {
            // More roots can only add ways to verify the chain.
            Err(rustls::Error::InvalidCertificate(error)) => match self.all() {
                Some(all) => verify(all),
                None => Err(rustls::Error::InvalidCertificate(error)),
            },
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.first.verify_tls12_signature(message, cert, signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.first.verify_tls13_signature(message, cert, signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.first.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use rustls::CertificateError;
    use rustls::pki_types::pem::PemObject;

    /// Self-signed server certificates for `bundle.test`, `dir.test` and `other.test` (made
    /// with openssl for these tests; their keys were not kept).
    const BUNDLE: &str = include_str!("testdata/bundle.pem");
    const DIR: &str = include_str!("testdata/dir.pem");
    const OTHER: &str = include_str!("testdata/other.pem");

    fn der(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    fn verify(roots: &SystemRoots, pem: &str, name: &str) -> Result<(), rustls::Error> {
        let name = ServerName::try_from(name.to_string()).unwrap();
        roots.verify_server_cert(&der(pem), &[], &name, &[], UnixTime::now()).map(drop)
    }

    /// A bundle file holding `BUNDLE` and, beside it, a directory holding `DIR` and a link to
    /// the bundle, as Debian's does.
    fn store() -> (tempfile::TempDir, Locations) {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("certs");
        std::fs::create_dir(&dir).unwrap();
        let bundle = root.path().join("bundle.crt");
        std::fs::write(&bundle, BUNDLE).unwrap();
        std::fs::write(dir.join("dir.pem"), DIR).unwrap();
        std::os::unix::fs::symlink(&bundle, dir.join("bundle.pem")).unwrap();
        (root, Locations { file: Some(bundle), dirs: vec![dir] })
    }

    #[test]
    fn a_server_of_the_bundle_is_verified_without_reading_the_directories() {
        let (_root, locations) = store();
        let roots = SystemRoots::new(locations, provider()).unwrap();
        verify(&roots, BUNDLE, "bundle.test").unwrap();
        assert!(!roots.read_all());
    }

    #[test]
    fn a_server_of_a_directory_alone_is_verified_after_reading_them() {
        let (_root, locations) = store();
        let roots = SystemRoots::new(locations, provider()).unwrap();
        verify(&roots, DIR, "dir.test").unwrap();
        assert!(roots.read_all());
        // The name is still checked.
        assert!(verify(&roots, DIR, "bundle.test").is_err());
    }

    #[test]
    fn a_server_of_no_root_is_refused_as_unknown() {
        let (_root, locations) = store();
        let roots = SystemRoots::new(locations, provider()).unwrap();
        let refused = verify(&roots, OTHER, "other.test").unwrap_err();
        assert_eq!(refused, rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer));
    }

    #[test]
    fn without_a_bundle_the_directories_are_read_at_once() {
        let (_root, mut locations) = store();
        locations.file = None;
        let roots = SystemRoots::new(locations.clone(), provider()).unwrap();
        verify(&roots, DIR, "dir.test").unwrap();
        verify(&roots, BUNDLE, "bundle.test").unwrap();
        assert!(!roots.read_all());
        // An unreadable bundle file beside them counts as none.
        locations.file = Some(PathBuf::from("/nonexistent/bundle.crt"));
        let roots = SystemRoots::new(locations, provider()).unwrap();
        verify(&roots, DIR, "dir.test").unwrap();
    }

    #[test]
    fn no_usable_root_makes_no_verifier() {
        let root = tempfile::tempdir().unwrap();
        let locations = Locations { file: Some(root.path().join("none.pem")), dirs: vec![] };
        assert!(SystemRoots::new(locations, provider()).is_none());
    }

    #[test]
    fn the_variables_replace_the_systems_places() {
        let system = || Locations { file: Some("/system.pem".into()), dirs: vec!["/sys".into()] };
        assert_eq!(Locations::choose(None, None, system), system());
        // An empty directory list counts as unset.
        assert_eq!(Locations::choose(None, Some("".into()), system), system());
        assert_eq!(
            Locations::choose(Some("/mine.pem".into()), None, system),
            Locations { file: Some("/mine.pem".into()), dirs: vec![] }
        );
        assert_eq!(
            Locations::choose(None, Some("/a::/b".into()), system),
            Locations { file: None, dirs: vec!["/a".into(), "/b".into()] }
        );
    }
}
