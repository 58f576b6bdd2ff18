import COpenSSL

extension PublicKey {
    /// An RSA public key from its big-endian modulus and public exponent, as a JWK carries them
    /// (`n`, `e`, RFC 7518 section 6.3.1). Nil when OpenSSL refuses the numbers.
    public convenience init?(rsaModulus modulus: [UInt8], exponent: [UInt8]) {
        guard !modulus.isEmpty, !exponent.isEmpty,
              let n = BN_bin2bn(modulus, Int32(modulus.count), nil) else { return nil }
        defer { BN_free(n) }
        guard let e = BN_bin2bn(exponent, Int32(exponent.count), nil) else { return nil }
        defer { BN_free(e) }
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard OSSL_PARAM_BLD_push_BN(builder, tollgate_param_rsa_n(), n) == 1, OSSL_PARAM_BLD_push_BN(builder, tollgate_param_rsa_e(), e) == 1,
              let parameters = OSSL_PARAM_BLD_to_param(builder) else { ERR_clear_error(); return nil }
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { ERR_clear_error(); return nil }
        defer { EVP_PKEY_CTX_free(context) }
        // EVP_PKEY_PUBLIC_KEY, spelled out: the macro is a compound expression Swift does not import.
        let selection = OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &key, Int32(selection), parameters) == 1,
              let key else { ERR_clear_error(); return nil }
        self.init(owning: key)
    }
}

extension PublicKey {
    /// The big-endian modulus and public exponent of an RSA key (to publish it as a JWK); nil for other keys.
    public var rsaComponents: (modulus: [UInt8], exponent: [UInt8])? {
        guard isRSA, let modulus = bigNumber("n"), let exponent = bigNumber("e") else { return nil }
        return (modulus, exponent)
    }

    private func bigNumber(_ name: String) -> [UInt8]? {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pointer, name, &number) == 1, let number else { ERR_clear_error(); return nil }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
        _ = BN_bn2bin(number, &bytes)
        return bytes
    }
}
