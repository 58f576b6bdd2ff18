import ProviderAPIs
import Rejections
import Toolkit

/// The `Signature` header of an Alipay+ / Antom notification (`AntomSignature`), its faults as reason codes.
struct AlipayPlusSignatureHeader {
    /// Nil when the header names no version (Antom then means the client's latest key).
    let keyVersion: Int?
    let signature: [UInt8]

    init(_ header: String?) throws(Rejection) {
        do {
            let parsed = try AntomSignature.parse(header)
            keyVersion = parsed.keyVersion
            signature = parsed.signature
        } catch {
            switch error {
            case .missing(let message): throw Rejection(.missingSignature, message)
            case .malformed(let message): throw Rejection(.malformedSignature, message)
            case .unsupportedAlgorithm(let message): throw Rejection(.unsupportedAlg, message)
            }
        }
    }
}
