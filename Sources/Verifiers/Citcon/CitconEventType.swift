import Events

/// Citcon's `transaction_type` and `status` in the vocabulary (Sources/Events/EventType.swift).
enum CitconEventType {
    static func eventType(transactionType: String, status: String) -> EventType {
        let status = status.lowercased()
        switch transactionType.lowercased() {
        case "charge":
            switch status {
            case "success", "captured": return .purchaseCompleted
            case "authorized": return .purchaseAuthorized
            case "fail", "failed": return .purchaseFailed
            case "cancelled", "canceled": return .purchaseCanceled
            default: return .storeOther
            }
        case "refund": return status == "success" ? .purchaseRefunded : .storeOther
        case "chargeback": return .purchaseChargeback
        default: return .storeOther
        }
    }
}
