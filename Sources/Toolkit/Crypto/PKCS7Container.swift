import COpenSSL

/// PKCS#7 signed data, read and made with OpenSSL: the content it carries, and the DER `SET OF
/// SEQUENCE { INTEGER type, INTEGER version, OCTET STRING value }` that Apple's app receipt is. Its
/// signature is not checked here: callers use what it names only to ask the store, which verifies.
public enum PKCS7Container {
    /// One element of a receipt-style attribute set.
    public struct Attribute: Sendable, Equatable {
        public let type: Int
        public let value: [UInt8]
        public init(type: Int, value: [UInt8]) { self.type = type; self.value = value }
    }

    /// The content of a PKCS#7 `signedData` whose content type is `data`, or nil.
    public static func signedContent(_ der: [UInt8]) -> [UInt8]? {
        defer { ERR_clear_error() }
        return der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let p7 = d2i_PKCS7(nil, &cursor, buffer.count) else { return nil }
            defer { PKCS7_free(p7) }
            guard OBJ_obj2nid(p7.pointee.type) == NID_pkcs7_signed, let signed = p7.pointee.d.sign,
                  let inner = signed.pointee.contents, OBJ_obj2nid(inner.pointee.type) == NID_pkcs7_data,
                  let data = inner.pointee.d.data else { return nil }
            return bytes(of: data)
        }
    }

    /// The elements of a DER `SET OF SEQUENCE { INTEGER, INTEGER, OCTET STRING }`, or nil when the
    /// bytes are not one. Elements of another shape are skipped.
    public static func attributes(_ der: [UInt8]) -> [Attribute]? {
        defer { ERR_clear_error() }
        guard let set = decodeStack(der, using: { d2i_ASN1_SET_ANY(nil, &$0, $1) }) else { return nil }
        defer { free(set) }
        var found: [Attribute] = []
        for index in 0..<OPENSSL_sk_num(set) {
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
        return found
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

    /// `content` signed with `key` as PKCS#7 signedData (DER), the certificate included: what a test
    /// makes an app receipt from.
    public static func sign(_ content: [UInt8], certificate: Certificate, key: PrivateKey) -> [UInt8]? {
        defer { ERR_clear_error() }
        guard let bio = content.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else { return nil }
        defer { BIO_free(bio) }
        guard let p7 = PKCS7_sign(certificate.pointer, key.pointer, nil, bio, PKCS7_BINARY | PKCS7_NOATTR) else { return nil }
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
