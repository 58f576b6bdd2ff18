import Merchant
import Rejections

// A merchant API's refusal compared with a case of its domain (`refusal.reason == .purchaseNotFound`), as
// TestSupport does for the common and webhook reasons.

func == (lhs: (any ReasonCode)?, rhs: CredentialReason) -> Bool {
    guard let reason = lhs as? CredentialReason else { return false }
    return reason.rawValue == rhs.rawValue
}

func == (lhs: (any ReasonCode)?, rhs: EntitlementReason) -> Bool {
    guard let reason = lhs as? EntitlementReason else { return false }
    return reason.rawValue == rhs.rawValue
}

func == (lhs: (any ReasonCode)?, rhs: PurchaseReason) -> Bool {
    guard let reason = lhs as? PurchaseReason else { return false }
    return reason.rawValue == rhs.rawValue
}

func == (lhs: (any ReasonCode)?, rhs: CheckoutReason) -> Bool {
    guard let reason = lhs as? CheckoutReason else { return false }
    return reason.rawValue == rhs.rawValue
}

func == (lhs: (any ReasonCode)?, rhs: SileoReason) -> Bool {
    guard let reason = lhs as? SileoReason else { return false }
    return reason.rawValue == rhs.rawValue
}
