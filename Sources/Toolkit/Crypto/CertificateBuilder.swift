import COpenSSL

/// Issues X.509 certificates with OpenSSL, for tests and benchmarks that need chains shaped like
/// a sender's (Apple's marker OIDs, with or without key identifiers) at chosen validity windows.
public struct CertificateBuilder {
    public var subject: String
    public var serial: Int = 1
    public var notBefore: Int64
    public var notAfter: Int64
    public var isCA = false
    /// Write subjectKeyIdentifier / authorityKeyIdentifier (Apple's test chain has neither).
    public var keyIdentifiers = true
    /// Dotted OIDs added as non-critical extensions with an ASN.1 NULL value.
    public var markerOIDs: [String] = []
    /// An OCSP responder URL for the Authority Information Access extension.
    public var ocspResponder: String?
    /// An extendedKeyUsage value, e.g. "OCSPSigning" for a delegated OCSP responder.
    public var extendedKeyUsage: String?

    public init(subject: String, notBefore: Int64, notAfter: Int64) {
        self.subject = subject
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// Signs `key`'s certificate with `issuerKey` (self-signed when `issuer` is nil).
    public func issue(key: PrivateKey, issuer: Certificate?, issuerKey: PrivateKey) -> Certificate? {
        guard let x509 = X509_new() else { return nil }
        defer { X509_free(x509) }
        guard X509_set_version(x509, 2) == 1,
              ASN1_INTEGER_set(X509_get_serialNumber(x509), serial) == 1,
              ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore)) != nil,
              ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter)) != nil,
              X509_set_pubkey(x509, key.pointer) == 1,
              let name = X509_NAME_new() else { return nil }
        defer { X509_NAME_free(name) }
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, subject, -1, -1, 0) == 1,
              X509_set_subject_name(x509, name) == 1,
              X509_set_issuer_name(x509, issuer.map { X509_get_subject_name($0.pointer) } ?? name) == 1 else { return nil }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.pointer ?? x509, x509, nil, nil, 0)
        var extensions = [(NID_basic_constraints, isCA ? "CA:TRUE" : "CA:FALSE")]
        if keyIdentifiers {
            extensions.append((NID_subject_key_identifier, "hash"))
            if issuer != nil { extensions.append((NID_authority_key_identifier, "keyid:always")) }
        }
        if isCA { extensions.append((NID_key_usage, "critical,keyCertSign,cRLSign")) }
        if let ocspResponder { extensions.append((NID_info_access, "OCSP;URI:\(ocspResponder)")) }
        if let extendedKeyUsage { extensions.append((NID_ext_key_usage, extendedKeyUsage)) }
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else { return nil }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else { return nil }
        }
        for oid in markerOIDs {
            guard let object = OBJ_txt2obj(oid, 1) else { return nil }
            defer { ASN1_OBJECT_free(object) }
            let null: [UInt8] = [0x05, 0x00]
            guard let data = ASN1_OCTET_STRING_new() else { return nil }
            defer { ASN1_OCTET_STRING_free(data) }
            guard ASN1_OCTET_STRING_set(data, null, 2) == 1,
                  let ext = X509_EXTENSION_create_by_OBJ(nil, object, 0, data) else { return nil }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else { return nil }
        }
        guard X509_sign(x509, issuerKey.pointer, EVP_sha256()) > 0 else { ERR_clear_error(); return nil }
        return Certificate.der(of: x509).flatMap { Certificate(der: $0) }
    }
}
