import COpenSSL

/// RFC 6960 with OpenSSL: the request for one certificate and the judgement of its answer.
/// No I/O here: the caller posts `requestDER` to `responderURL` and hands back the bytes.
public struct OCSPQuery: Sendable {
    public let responderURL: String
    public let requestDER: [UInt8]
    let certificate: Certificate
    let issuer: Certificate

    /// Nil when the certificate names no OCSP responder (AIA) and no override is given.
    public init?(certificate: Certificate, issuer: Certificate, responderOverride: String? = nil) {
        guard let url = responderOverride ?? certificate.ocspResponderURLs.first else { return nil }
        guard let id = Self.certificateID(certificate, issuer), let request = OCSP_REQUEST_new() else { return nil }
        defer { OCSP_REQUEST_free(request) }
        guard OCSP_request_add0_id(request, id) != nil else {
            OCSP_CERTID_free(id)
            ERR_clear_error()
            return nil
        }
        let length = i2d_OCSP_REQUEST(request, nil)
        guard length > 0 else { ERR_clear_error(); return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_OCSP_REQUEST(request, &cursor)
        }
        self.responderURL = url
        self.requestDER = der
        self.certificate = certificate
        self.issuer = issuer
    }

    public enum Verdict: Sendable, Equatable {
        /// Good; may be cached until `nextUpdate` (seconds since 1970) when the responder gave one.
        case good(nextUpdate: Int64?)
        case revoked
        /// The responder does not know the certificate.
        case unknown
        /// Not a usable answer: unsigned, signed by someone else, stale, for another certificate.
        case invalid(String)
    }

    /// Judges a responder's answer: a successful response, signed by the issuer or a responder it
    /// delegated to (chain to `trustStore`'s roots), about this certificate, current within 60 s.
    public func evaluate(responseDER: [UInt8], trustStore: TrustStore) -> Verdict {
        defer { ERR_clear_error() }
        let response: OpaquePointer? = responseDER.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_OCSP_RESPONSE(nil, &cursor, buffer.count)
        }
        guard let response else { return .invalid("not an OCSP response") }
        defer { OCSP_RESPONSE_free(response) }
        let status = OCSP_response_status(response)
        guard status == OCSP_RESPONSE_STATUS_SUCCESSFUL else { return .invalid("responder status \(status)") }
        guard let basic = OCSP_response_get1_basic(response) else { return .invalid("no basic response") }
        defer { OCSP_BASICRESP_free(basic) }

        guard let offered = OPENSSL_sk_new_null() else { return .invalid("out of memory") }
        defer { OPENSSL_sk_free(offered) }
        _ = OPENSSL_sk_push(offered, UnsafeRawPointer(issuer.pointer))
        guard OCSP_basic_verify(basic, offered, trustStore.store, 0) == 1 else {
            return .invalid("the response is not signed by the issuer or its delegated responder")
        }

        guard let id = Self.certificateID(certificate, issuer) else { return .invalid("cannot identify the certificate") }
        defer { OCSP_CERTID_free(id) }
        var certificateStatus: Int32 = -1
        var reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard OCSP_resp_find_status(basic, id, &certificateStatus, &reason, &revokedAt, &thisUpdate, &nextUpdate) == 1 else {
            return .invalid("the response is about another certificate")
        }
        guard let thisUpdate, OCSP_check_validity(thisUpdate, nextUpdate, 60, -1) == 1 else {
            return .invalid("the response is not current")
        }
        switch certificateStatus {
        case V_OCSP_CERTSTATUS_GOOD:
            return .good(nextUpdate: nextUpdate.flatMap { Certificate.seconds(UnsafePointer($0)) })
        case V_OCSP_CERTSTATUS_REVOKED: return .revoked
        default: return .unknown
        }
    }

    /// SHA-1 CertID, as responders universally index by it (RFC 5019).
    private static func certificateID(_ certificate: Certificate, _ issuer: Certificate) -> OpaquePointer? {
        guard let id = OCSP_cert_to_id(EVP_sha1(), certificate.pointer, issuer.pointer) else {
            ERR_clear_error()
            return nil
        }
        return id
    }
}
