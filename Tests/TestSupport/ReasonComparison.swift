import Rejections
import Verifiers

// A refusal's reason, compared in tests with a case of the domain it names (`reason == .badSignature`):
// one overload per domain, so the case name picks its enum.

public func == (lhs: (any ReasonCode)?, rhs: CommonReason) -> Bool {
    guard let reason = lhs as? CommonReason else { return false }
    return reason.rawValue == rhs.rawValue
}

public func == (lhs: (any ReasonCode)?, rhs: WebhookReason) -> Bool {
    guard let reason = lhs as? WebhookReason else { return false }
    return reason.rawValue == rhs.rawValue
}

public func != (lhs: (any ReasonCode)?, rhs: CommonReason) -> Bool { !(lhs == rhs) }
public func != (lhs: (any ReasonCode)?, rhs: WebhookReason) -> Bool { !(lhs == rhs) }
