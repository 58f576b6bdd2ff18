/// How a checkout's state moves (docs/checkouts.md), as a pure function of its state and what a
/// provider's notification says: the one place the states' moves are written. `CheckoutStep` applies a
/// decision in the projection's transaction; `CheckoutRecords` asks `sources(of:)` for the states a
/// move may start from (the refund request, the expiry sweeper).
enum CheckoutStateMachine {
    /// What a verified notification naming a checkout says.
    enum Notice: Sendable, Equatable {
        /// A completed payment of the checkout's reference; `mismatch` when its signed amount, currency
        /// or environment is not the checkout's (the payment is quarantined).
        case payment(mismatch: QuarantinedPayment.Reason?)
        /// A refund or chargeback of the checkout's payment.
        case reversal
        /// The result of the refund Tollgate asked for; `current` whether the request it names is still
        /// the checkout's (a failure clears it).
        case refundResult(RefundResult, current: Bool)
    }

    enum RefundResult: Sendable, Equatable { case succeeded, declined, unknown }

    /// What becomes of the checkout and of the event's purchase change.
    struct Decision: Sendable, Equatable {
        /// The checkout's new state; nil: it stays.
        var next: CheckoutRecord.State?
        /// Whether the event's purchase change applies (false: it entitles and changes no one).
        var proceeds: Bool
        /// `tollgate_checkout_notifications_total{outcome}`; nil: not counted.
        var outcome: String?
        /// Keep the payment as a quarantined payment.
        var quarantine = false
        /// Forget the refund request, so another can be asked.
        var clearRefundRequest = false
    }

    /// `state` nil: the checkout is gone (pruned after it expired unpaid).
    static func decide(_ notice: Notice, state: CheckoutRecord.State?) -> Decision {
        switch notice {
        case .payment(mismatch: .some):
            // The payment, not the checkout, is kept apart: whoever knows a reference cannot lock the
            // owner's checkout with a wrong payment.
            return Decision(next: nil, proceeds: false, outcome: "quarantined", quarantine: true)
        case .payment(mismatch: nil):
            switch state {
            case .pending: return Decision(next: .paid, proceeds: true, outcome: "paid")
            // The money was taken: a late payment still pays an expired checkout.
            case .expired, nil: return Decision(next: state == nil ? nil : .paid, proceeds: true, outcome: "paid_after_expiry")
            case .paid: return Decision(next: nil, proceeds: true, outcome: "repeated")
            // A late copy of the payment must not entitle again.
            case .refunded: return Decision(next: nil, proceeds: false, outcome: "repeated")
            }
        case .reversal:
            // The purchase's own state change makes the entitlement inactive, whatever the checkout's state.
            return state == .paid ? Decision(next: .refunded, proceeds: true, outcome: "refunded") : Decision(next: nil, proceeds: true)
        case .refundResult(_, current: false):
            // Asked elsewhere (the provider's dashboard), or a request a failure cleared: nothing says which payment it returned.
            return Decision(next: nil, proceeds: false, outcome: "refund_unmatched")
        case .refundResult(.succeeded, current: true):
            return state == .paid ? Decision(next: .refunded, proceeds: true, outcome: "refunded") : Decision(next: nil, proceeds: true)
        case .refundResult(.declined, current: true):
            // The purchase stands; the request is freed for another ask.
            return Decision(next: nil, proceeds: false, outcome: "refund_failed", clearRefundRequest: true)
        case .refundResult(.unknown, current: true):
            // A status the provider does not document: the request stays under way for its final result.
            return Decision(next: nil, proceeds: false, outcome: "refund_unknown")
        }
    }

    /// The states a checkout may move to `target` from: a payment pays a pending or expired one, a
    /// reversal or refund takes back a paid one, the sweeper expires a pending one.
    static func sources(of target: CheckoutRecord.State) -> [CheckoutRecord.State] {
        switch target {
        case .paid: [.pending, .expired]
        case .refunded: [.paid]
        case .expired: [.pending]
        case .pending: []
        }
    }
}
