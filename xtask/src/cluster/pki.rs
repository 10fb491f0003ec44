//! The control plane's certificates and keys, made anew at each start: a
//! CA; the API server's serving certificate (IP and DNS SANs, as rustls
//! requires: it checks an IP address only against IP SANs); an admin client
//! certificate in `system:masters`; the ServiceAccount signing key pair;
//! and the admin kubeconfig. ECDSA P-256 throughout (fast to make, and
//! every component reads it).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// The files the components read, all under one folder.
pub struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }
    pub fn ca_key(&self) -> PathBuf {
        self.dir.join("ca.key")
    }
    pub fn serving_cert(&self) -> PathBuf {
        self.dir.join("apiserver.crt")
    }
    pub fn serving_key(&self) -> PathBuf {
        self.dir.join("apiserver.key")
    }
    pub fn admin_cert(&self) -> PathBuf {
        self.dir.join("admin.crt")
    }
    pub fn admin_key(&self) -> PathBuf {
        self.dir.join("admin.key")
    }
    pub fn sa_public(&self) -> PathBuf {
        self.dir.join("sa.pub")
    }
    pub fn sa_private(&self) -> PathBuf {
        self.dir.join("sa.key")
    }
}

fn err(what: &str) -> impl FnOnce(rcgen::Error) -> String + '_ {
    move |e| format!("making {what}: {e}")
}

/// Makes every certificate and key into `dir` (emptied first).
pub fn make(dir: &Path) -> Result<Pki, String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let pki = Pki {
        dir: dir.to_path_buf(),
    };

    let ca_key = KeyPair::generate().map_err(err("the CA key"))?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err("the CA"))?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "capstan test control plane CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key).map_err(err("the CA"))?;
    let issuer = Issuer::from_params(&ca_params, &ca_key);
    write(&pki.ca_cert(), &ca.pem())?;
    write(&pki.ca_key(), &ca_key.serialize_pem())?;

    // The serving certificate: loopback by IP and name, and the first
    // address of the service range (the `kubernetes` Service).
    let serving_key = KeyPair::generate().map_err(err("the serving key"))?;
    let mut serving = CertificateParams::new(vec![
        "localhost".to_owned(),
        "kubernetes".to_owned(),
        "kubernetes.default".to_owned(),
        "kubernetes.default.svc".to_owned(),
    ])
    .map_err(err("the serving certificate"))?;
    for ip in ["127.0.0.1", "10.0.0.1"] {
        let ip = ip
            .parse()
            .map_err(|e| format!("parsing the address {ip}: {e}"))?;
        serving.subject_alt_names.push(SanType::IpAddress(ip));
    }
    serving
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    serving.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = serving
        .signed_by(&serving_key, &issuer)
        .map_err(err("the serving certificate"))?;
    write(&pki.serving_cert(), &cert.pem())?;
    write(&pki.serving_key(), &serving_key.serialize_pem())?;

    // The admin: the group system:masters is bound to cluster-admin.
    let admin_key = KeyPair::generate().map_err(err("the admin key"))?;
    let mut admin =
        CertificateParams::new(Vec::<String>::new()).map_err(err("the admin certificate"))?;
    admin.distinguished_name.push(DnType::CommonName, "admin");
    admin
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    admin.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = admin
        .signed_by(&admin_key, &issuer)
        .map_err(err("the admin certificate"))?;
    write(&pki.admin_cert(), &cert.pem())?;
    write(&pki.admin_key(), &admin_key.serialize_pem())?;

    // The ServiceAccount token signer (ES256).
    let sa_key = KeyPair::generate().map_err(err("the service-account key"))?;
    write(&pki.sa_private(), &sa_key.serialize_pem())?;
    write(&pki.sa_public(), &sa_key.public_key_pem())?;
    Ok(pki)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// A kubeconfig for `server` that trusts the CA and authenticates with
/// either the admin client certificate or a bearer token.
pub fn kubeconfig(pki: &Pki, server: &str, user: &User) -> Result<String, String> {
    use base64::Engine as _;
    let b64 = |path: &Path| -> Result<String, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    };
    let credentials = match user {
        User::Admin => format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&pki.admin_cert())?,
            b64(&pki.admin_key())?
        ),
        User::Token(token) => format!("    token: {token}\n"),
    };
    let name = match user {
        User::Admin => "admin",
        User::Token(_) => "capstan",
    };
    Ok(format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: capstan-test\n  cluster:\n    \
         server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {name}\n  user:\n\
         {credentials}contexts:\n- name: {name}@capstan-test\n  context:\n    cluster: capstan-test\n    \
         user: {name}\ncurrent-context: {name}@capstan-test\n",
        ca = b64(&pki.ca_cert())?,
    ))
}

/// Who a kubeconfig authenticates as.
pub enum User {
    /// The admin client certificate (`system:masters`).
    Admin,
    /// A bearer token (a ServiceAccount's).
    Token(String),
}
