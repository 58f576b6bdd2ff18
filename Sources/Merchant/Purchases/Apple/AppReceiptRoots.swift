import Config
import Foundation
import Toolkit

/// The roots an app receipt's signer must chain to (`purchases.receiptRootCertificates`): the files
/// configured, read at start, or else the Apple Inc. Root built in, which Apple's receipts chain to
/// (Apple Root CA - G3, which signs StoreKit 2 and notifications, does not).
public enum AppReceiptRoots {
    public static let key = "purchases.receiptRootCertificates"
    static let appleIncRootCommonName = "Apple Root CA"
    /// SHA-256 of the Apple Inc. Root certificate, as Apple's certificate authority page publishes it
    /// (B0:B1:73:0E:...:01:F0:24).
    static let appleIncRootFingerprint = "b0b1730ecbc7ff4505142c49f1295e6eda6bcaed7e2c68c5be91b5a11001f024"

    /// The Apple Inc. Root certificate (DER, base64), valid 2006-04-25 to 2035-02-09; checked against
    /// its fingerprint where it is read.
    static let appleIncRootBase64 = [
        "MIIEuzCCA6OgAwIBAgIBAjANBgkqhkiG9w0BAQUFADBiMQswCQYDVQQGEwJVUzETMBEGA1UEChMKQXBwbGUgSW5jLjEmMCQG",
        "A1UECxMdQXBwbGUgQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkxFjAUBgNVBAMTDUFwcGxlIFJvb3QgQ0EwHhcNMDYwNDI1MjE0",
        "MDM2WhcNMzUwMjA5MjE0MDM2WjBiMQswCQYDVQQGEwJVUzETMBEGA1UEChMKQXBwbGUgSW5jLjEmMCQGA1UECxMdQXBwbGUg",
        "Q2VydGlmaWNhdGlvbiBBdXRob3JpdHkxFjAUBgNVBAMTDUFwcGxlIFJvb3QgQ0EwggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAw",
        "ggEKAoIBAQDkkakJH5HbHkdQ6wXtXnmELes2oldMVeyLGYne+Uts9QerIjAC6Bg++FAJ039BqJj50cpmnCRrEdCju+QbKsMf",
        "lZ56DKRHi1vUFjczy8QPTc4UadHJGXL1XQ7Vf1+b8iUDulWPTV0N8WQ1IxVLFVkds5T39pyez1C6wVhQZ48ItCD3y6wsIG9w",
        "tj8BMIy3Q88PnT3zK0koGsj+zrW5DtleHNbLPbU6rfQPDgCSC7EhFi501TwN22IWq6NxkkdTVcGvL0Gz+PvjcM3mo0xFfh9M",
        "a1CWQYnEdGILEINBhzOKgbEwWOxaBDKMaLOPHd5lc/9nXmW8Sdh2nzMUZaF3lMktAgMBAAGjggF6MIIBdjAOBgNVHQ8BAf8E",
        "BAMCAQYwDwYDVR0TAQH/BAUwAwEB/zAdBgNVHQ4EFgQUK9BpR5R2Cf70a40uQKb3R01/CF4wHwYDVR0jBBgwFoAUK9BpR5R2",
        "Cf70a40uQKb3R01/CF4wggERBgNVHSAEggEIMIIBBDCCAQAGCSqGSIb3Y2QFATCB8jAqBggrBgEFBQcCARYeaHR0cHM6Ly93",
        "d3cuYXBwbGUuY29tL2FwcGxlY2EvMIHDBggrBgEFBQcCAjCBthqBs1JlbGlhbmNlIG9uIHRoaXMgY2VydGlmaWNhdGUgYnkg",
        "YW55IHBhcnR5IGFzc3VtZXMgYWNjZXB0YW5jZSBvZiB0aGUgdGhlbiBhcHBsaWNhYmxlIHN0YW5kYXJkIHRlcm1zIGFuZCBj",
        "b25kaXRpb25zIG9mIHVzZSwgY2VydGlmaWNhdGUgcG9saWN5IGFuZCBjZXJ0aWZpY2F0aW9uIHByYWN0aWNlIHN0YXRlbWVu",
        "dHMuMA0GCSqGSIb3DQEBBQUAA4IBAQBcNplMLXi37Yyb3PN3m/J20ncwT8EfhYOFG5k9RzfyqZtAjizUsZAS2L70c5vu0mQP",
        "y3lPNNiiPvl4/2vIB+x9OYOLUyDTOMSxv5pPCmv/K/xZpwUJfBdAVhEedNO3iyM7R6PVbyTi69G3cN8PReEnyvFteO3ntRcX",
        "qNx+IjXKJdXZD9Zr1KIkIxH3oayPc4FgxhtbCS+SsvhESPBgOJ4V9T0mZyCKM2r3DYLP3uujL/lTaltkwGMzd/c6ByxW69oP",
        "IQ7aunMZT7XZNn/Bh1XZp5m5MkL72NVxnn6hUrcbvZNCJBIqxw8dtk2cXmPIS4AXUKqK1drk/NAJBzewdXUh",
    ].joined()

    /// The built-in Apple Inc. Root; nil only if the bytes above were changed.
    static var appleIncRoot: Certificate? {
        guard let der = Base64.decodeStandard(appleIncRootBase64), let certificate = Certificate(der: der),
              Digest.hex(certificate.sha256Fingerprint) == appleIncRootFingerprint else { return nil }
        return certificate
    }

    /// The configured roots, or the built-in one when none is configured. A file that cannot be read or
    /// is no certificate stops the start, naming the key; so does one named Apple Root CA that is not
    /// Apple's.
    public static func load(paths: [String]) throws(ConfigError) -> [Certificate] {
        guard !paths.isEmpty else {
            guard let root = appleIncRoot else { throw ConfigError(key: key, message: "the built-in Apple Inc. Root is unreadable") }
            return [root]
        }
        var roots: [Certificate] = []
        for (index, path) in paths.enumerated() {
            let entry = "\(key)[\(index)]"
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError(key: entry, message: "cannot read \(path)")
            }
            guard let certificate = Certificate.load(pemOrDER: Array(data)) else {
                throw ConfigError(key: entry, message: "\(path) is not a PEM or DER certificate")
            }
            if certificate.commonName == appleIncRootCommonName, Digest.hex(certificate.sha256Fingerprint) != appleIncRootFingerprint {
                throw ConfigError(key: entry, message: "\(path) is named \(appleIncRootCommonName) but its SHA-256 fingerprint is not Apple's")
            }
            roots.append(certificate)
        }
        return roots
    }
}
