import COpenSSL

/// PKCS#7 signed data, read and made with OpenSSL: its content only once its signature verified
/// (`verifiedSignedData`), and the DER `SET OF SEQUENCE { INTEGER type, INTEGER version, OCTET STRING
/// value }` that Apple's app receipt is. Whom the signer's certificate chains to is the caller's check,
/// made at a time of its choosing (a receipt's creation date) with `TrustStore`.
public enum PKCS7Container {
    /// One element of a receipt-style attribute set.
    public struct Attribute: Sendable, Equatable {
        public let type: Int
        public let value: [UInt8]
        public init(type: Int, value: [UInt8]) { self.type = type; self.value = value }
    }

    /// A signedData whose one signature verified over its content, with the certificates it carries.
    public struct VerifiedSignedData: Sendable {
        /// The content exactly as carried: the bytes the signature was checked over, never re-encoded.
        public let content: [UInt8]
        /// The certificate whose key made the signature, found in the container: not yet trusted.
        public let signer: Certificate
        /// The container's other certificates: untrusted candidates for the signer's chain.
        public let otherCertificates: [Certificate]
    }

    public enum SignedDataProblem: Error, Equatable {
        /// Not one PKCS#7 signedData (trailing bytes included) with embedded `data` content and exactly
        /// one signer whose certificate it carries; the text says which, for people.
        case malformed(String)
        /// The signature does not verify over the content with the signer certificate's key.
        case badSignature
    }

    /// The content of a PKCS#7 `signedData` whose content type is `data`, once its one signature
    /// verified with the key of the signer certificate the container carries (PKCS7_verify). The
    /// signer's chain is not checked here (PKCS7_NOVERIFY): the caller does, at the time it chooses.
    /// More than `maxCertificates` certificates is malformed: none is handed to a chain builder.
    public static func verifiedSignedData(_ der: [UInt8], maxCertificates: Int) -> Result<VerifiedSignedData, SignedDataProblem> {
        defer { ERR_clear_error() }
        return der.withUnsafeBufferPointer { buffer -> Result<VerifiedSignedData, SignedDataProblem> in
            guard let base = buffer.baseAddress else { return .failure(.malformed("empty")) }
            var cursor: UnsafePointer<UInt8>? = base
            guard let p7 = d2i_PKCS7(nil, &cursor, buffer.count) else { return .failure(.malformed("not PKCS#7")) }
            defer { PKCS7_free(p7) }
            // One encoding, one meaning: nothing may follow the container.
            guard let end = cursor, end - base == buffer.count else { return .failure(.malformed("bytes follow the PKCS#7 container")) }
            guard OBJ_obj2nid(p7.pointee.type) == NID_pkcs7_signed, let signed = p7.pointee.d.sign else {
                return .failure(.malformed("not PKCS#7 signedData"))
            }
            guard let inner = signed.pointee.contents, OBJ_obj2nid(inner.pointee.type) == NID_pkcs7_data else {
                return .failure(.malformed("the signed content is not of type data"))
            }
            guard let data = inner.pointee.d.data else { return .failure(.malformed("the signed content is not embedded")) }
            guard signed.pointee.cert.map({ OPENSSL_sk_num($0) <= maxCertificates }) ?? true else {
                return .failure(.malformed("more than \(maxCertificates) certificates"))
            }
            guard let infos = PKCS7_get_signer_info(p7), OPENSSL_sk_num(infos) == 1 else {
                return .failure(.malformed("not exactly one signer"))
            }
            // The signer as PKCS7_verify finds it: by issuer and serial among the container's certificates.
            guard let signers = PKCS7_get0_signers(p7, nil, 0) else { return .failure(.malformed("the signer's certificate is not in the container")) }
            defer { OPENSSL_sk_free(signers) }
            guard OPENSSL_sk_num(signers) == 1, let signerPointer = OPENSSL_sk_value(signers, 0).map({ OpaquePointer($0) }),
                  let signer = Certificate.der(of: signerPointer).flatMap({ Certificate(der: $0) }) else {
                return .failure(.malformed("the signer's certificate is unreadable"))
            }
            // Digest of the embedded content octets as received, then the signature with the signer's key.
            guard PKCS7_verify(p7, nil, nil, nil, nil, PKCS7_NOVERIFY | PKCS7_BINARY) == 1 else { return .failure(.badSignature) }
            var others: [Certificate] = []
            if let stack = signed.pointee.cert {
                for index in 0..<OPENSSL_sk_num(stack) {
                    guard let raw = OPENSSL_sk_value(stack, index), OpaquePointer(raw) != signerPointer else { continue }
                    guard let certificate = Certificate.der(of: OpaquePointer(raw)).flatMap({ Certificate(der: $0) }) else {
                        return .failure(.malformed("a certificate of the container is unreadable"))
                    }
                    others.append(certificate)
                }
            }
            return .success(VerifiedSignedData(content: bytes(of: data), signer: signer, otherCertificates: others))
        }
    }

    public enum AttributeSetProblem: Error, Equatable {
        case notASet
        /// More elements than the caller will walk.
        case tooManyElements
    }

    /// The elements of a DER `SET OF SEQUENCE { INTEGER, INTEGER, OCTET STRING }`. The set's elements
    /// are taken from `budget`, and none is walked when it holds more than is left. Elements of another
    /// shape are skipped.
    public static func attributes(_ der: [UInt8], budget: inout Int) -> Result<[Attribute], AttributeSetProblem> {
        defer { ERR_clear_error() }
        guard let set = decodeStack(der, using: { d2i_ASN1_SET_ANY(nil, &$0, $1) }) else { return .failure(.notASet) }
        defer { free(set) }
        let count = OPENSSL_sk_num(set)
        guard count <= budget else { return .failure(.tooManyElements) }
        budget -= Int(count)
        var found: [Attribute] = []
        found.reserveCapacity(Int(count))
        for index in 0..<count {
            guard let element = OPENSSL_sk_value(set, index)?.assumingMemoryBound(to: ASN1_TYPE.self),
                  element.pointee.type == V_ASN1_SEQUENCE, let sequenceString = element.pointee.value.sequence,
                  let fields = decodeStack(bytes(of: sequenceString), using: { d2i_ASN1_SEQUENCE_ANY(nil, &$0, $1) })
            else { continue }
            defer { free(fields) }
            guard OPENSSL_sk_num(fields) == 3,
                  let type = OPENSSL_sk_value(fields, 0)?.assumingMemoryBound(to: ASN1_TYPE.self),
                  let value = OPENSSL_sk_value(fields, 2)?.assumingMemoryBound(to: ASN1_TYPE.self),
                  type.pointee.type == V_ASN1_INTEGER, value.pointee.type == V_ASN1_OCTET_STRING,
                  let integer = type.pointee.value.integer, let octets = value.pointee.value.octet_string else { continue }
            var number: Int64 = 0
            guard ASN1_INTEGER_get_int64(&number, integer) == 1, let typeNumber = Int(exactly: number) else { continue }
            found.append(Attribute(type: typeNumber, value: bytes(of: octets)))
        }
        return .success(found)
    }

    /// The text of a DER UTF8String or IA5String, or nil.
    public static func string(_ der: [UInt8]) -> String? {
        defer { ERR_clear_error() }
        return der.withUnsafeBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let decoded = d2i_ASN1_TYPE(nil, &cursor, buffer.count) else { return nil }
            defer { ASN1_TYPE_free(decoded) }
            guard decoded.pointee.type == V_ASN1_UTF8STRING || decoded.pointee.type == V_ASN1_IA5STRING,
                  let text = decoded.pointee.value.asn1_string else { return nil }
            return String(validating: bytes(of: text), as: UTF8.self)
        }
    }

    /// `content` signed with `key` as PKCS#7 signedData (DER), the certificate and `chain` (e.g. the
    /// intermediate and root, as Apple's receipts carry them) included: what a test makes an app receipt from.
    public static func sign(_ content: [UInt8], certificate: Certificate, key: PrivateKey, chain: [Certificate] = []) -> [UInt8]? {
        defer { ERR_clear_error() }
        guard let bio = content.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else { return nil }
        defer { BIO_free(bio) }
        guard let extra = OPENSSL_sk_new_null() else { return nil }
        // PKCS7_sign takes its own references to these; the stack itself is ours.
        defer { OPENSSL_sk_free(extra) }
        for certificate in chain { guard OPENSSL_sk_push(extra, UnsafeRawPointer(certificate.pointer)) > 0 else { return nil } }
        guard let p7 = PKCS7_sign(certificate.pointer, key.pointer, extra, bio, PKCS7_BINARY | PKCS7_NOATTR) else { return nil }
        defer { PKCS7_free(p7) }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_PKCS7(p7, &out)
        guard length > 0, let out else { return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    private static func bytes(of string: UnsafeMutablePointer<ASN1_STRING>) -> [UInt8] {
        guard let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
    }

    private static func decodeStack(_ der: [UInt8], using decode: (inout UnsafePointer<UInt8>?, Int) -> OpaquePointer?) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return decode(&cursor, buffer.count)
        }
    }

    private static func free(_ stack: OpaquePointer) {
        OPENSSL_sk_pop_free(stack) { element in ASN1_TYPE_free(element?.assumingMemoryBound(to: ASN1_TYPE.self)) }
    }
}
