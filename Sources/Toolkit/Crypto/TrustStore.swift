import COpenSSL

/// A set of trusted roots (`X509_STORE`) that verifies a leaf through untrusted intermediates.
/// The chain is built to a configured root: certificates offered by the sender as "root" are
/// never added, so they cannot be trusted by accident.
public final class TrustStore: @unchecked Sendable {
    public enum Failure: Error, Equatable {
        case expired
        case untrusted(String)
    }

    let store: OpaquePointer
    public let roots: [Certificate]

    public init?(roots: [Certificate]) {
        guard let store = X509_STORE_new() else { return nil }
        for root in roots where X509_STORE_add_cert(store, root.pointer) != 1 {
            ERR_clear_error()
        }
        self.store = store
        self.roots = roots
    }

    deinit { X509_STORE_free(store) }

    /// What OpenSSL built: its length (leaf and root included) and the window in which every
    /// certificate of it is valid, so a cached result can be re-checked at another time.
    public struct VerifiedChain: Sendable {
        public let length: Int
        public let validity: ClosedRange<Int64>
        /// The configured root the chain ends at.
        public let root: Certificate?
    }

    /// Verifies `leaf <- intermediates... <- root` at `time` (seconds since 1970).
    public func verify(leaf: Certificate, intermediates: [Certificate], at time: Int64, strict: Bool) -> Result<VerifiedChain, Failure> {
        guard let context = X509_STORE_CTX_new() else { return .failure(.untrusted("out of memory")) }
        defer { X509_STORE_CTX_free(context) }
        guard let untrusted = OPENSSL_sk_new_null() else { return .failure(.untrusted("out of memory")) }
        defer { OPENSSL_sk_free(untrusted) }
        for certificate in intermediates { _ = OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.pointer)) }

        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
            ERR_clear_error()
            return .failure(.untrusted("X509_STORE_CTX_init failed"))
        }
        let parameters = X509_STORE_CTX_get0_param(context)
        X509_VERIFY_PARAM_set_time(parameters, time_t(time))
        if strict { X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT)) }

        let ok = X509_verify_cert(context)
        defer { ERR_clear_error() }
        guard ok == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            if code == X509_V_ERR_CERT_HAS_EXPIRED || code == X509_V_ERR_CERT_NOT_YET_VALID {
                return .failure(.expired)
            }
            return .failure(.untrusted(String(cString: X509_verify_cert_error_string(Int(code)))))
        }
        let chain = X509_STORE_CTX_get0_chain(context)
        let length = Int(OPENSSL_sk_num(chain))
        var notBefore = Int64.min
        var notAfter = Int64.max
        for index in 0..<length {
            guard let raw = OPENSSL_sk_value(chain, Int32(index)), let window = Certificate.validity(of: OpaquePointer(raw)) else {
                return .failure(.untrusted("a certificate of the chain has an unreadable validity"))
            }
            notBefore = max(notBefore, window.lowerBound)
            notAfter = min(notAfter, window.upperBound)
        }
        guard notBefore <= notAfter else { return .failure(.expired) }
        // The store holds the very X509 objects of `roots`, so the anchor is found by identity.
        let anchor = OPENSSL_sk_value(chain, Int32(length - 1)).map { OpaquePointer($0) }
        let root = roots.first { $0.pointer == anchor }
        return .success(VerifiedChain(length: length, validity: notBefore...notAfter, root: root))
    }
}
