/// A reason a request was refused: its code (the `error` of the JSON body, the `reason` label of the
/// rejection metrics, the log field, `tollgate verify`'s error) and the HTTP status it answers with.
/// Each domain owns an enum of its reasons (`CommonReason` here, `WebhookReason` in Verifiers, the
/// merchant APIs' in Merchant); `tollgate describe` and docs/reason-codes.md list them all.
public protocol ReasonCode: Sendable, CustomStringConvertible {
    var code: String { get }
    var httpStatus: Int { get }
    /// Which enum this reason is of, as `tollgate describe` groups them (`common`, `webhook`, `purchases`...).
    static var domain: String { get }
}

extension ReasonCode where Self: RawRepresentable, Self.RawValue == String {
    public var code: String { rawValue }
    public var description: String { rawValue }
}

/// A domain's reasons as `tollgate describe` lists them.
public struct ReasonCodeList: Sendable {
    public let domain: String
    public let reasons: [any ReasonCode]

    public init<Reason: ReasonCode & CaseIterable>(_ type: Reason.Type) {
        domain = Reason.domain
        reasons = Array(type.allCases)
    }
}
