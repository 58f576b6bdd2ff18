import Entitlements
import Events
import StoreTestSupport
import Testing
import TestSupport
import Toolkit
@testable import Merchant

/// The checkout's moves as a pure function, and their application in the projection's transaction.
@Suite("Checkouts: the state machine and its steps")
struct CheckoutStateMachineTests {
    typealias Machine = CheckoutStateMachine
    typealias Decision = CheckoutStateMachine.Decision

    @Test("every notice in every state: the move, whether the event entitles, what is counted")
    func decisions() {
        let cases: [(Machine.Notice, CheckoutRecord.State?, Decision)] = [
            (.payment(mismatch: nil), .pending, Decision(next: .paid, proceeds: true, outcome: "paid")),
            (.payment(mismatch: nil), .expired, Decision(next: .paid, proceeds: true, outcome: "paid_after_expiry")),
            (.payment(mismatch: nil), nil, Decision(next: nil, proceeds: true, outcome: "paid_after_expiry")),
            (.payment(mismatch: nil), .paid, Decision(next: nil, proceeds: true, outcome: "repeated")),
            (.payment(mismatch: nil), .refunded, Decision(next: nil, proceeds: false, outcome: "repeated")),
            (.payment(mismatch: .amountMismatch), .pending, Decision(next: nil, proceeds: false, outcome: "quarantined", quarantine: true)),
            (.payment(mismatch: .environmentMismatch), .paid, Decision(next: nil, proceeds: false, outcome: "quarantined", quarantine: true)),
            (.reversal, .paid, Decision(next: .refunded, proceeds: true, outcome: "refunded")),
            (.reversal, .pending, Decision(next: nil, proceeds: true)),
            (.reversal, .refunded, Decision(next: nil, proceeds: true)),
            (.refundResult(.succeeded, current: true), .paid, Decision(next: .refunded, proceeds: true, outcome: "refunded")),
            (.refundResult(.succeeded, current: true), .refunded, Decision(next: nil, proceeds: true)),
            (.refundResult(.succeeded, current: false), .paid, Decision(next: nil, proceeds: false, outcome: "refund_unmatched")),
            (.refundResult(.declined, current: true), .paid, Decision(next: nil, proceeds: false, outcome: "refund_failed", clearRefundRequest: true)),
            (.refundResult(.unknown, current: true), .paid, Decision(next: nil, proceeds: false, outcome: "refund_unknown")),
        ]
        for (notice, state, expected) in cases {
            #expect(Machine.decide(notice, state: state) == expected, "\(notice) in \(state?.rawValue ?? "none")")
        }
        // Every move the machine makes starts from a state `sources` allows, which the SQL updates use.
        for notice in cases.map(\.0) {
            for state in CheckoutRecord.State.allCases {
                if let next = Machine.decide(notice, state: state).next { #expect(Machine.sources(of: next).contains(state)) }
            }
        }
        #expect(Machine.sources(of: .expired) == [.pending])
        #expect(Machine.sources(of: .pending).isEmpty)
    }

    @Test("decided in the transaction, not when prepared: a payment and its refund prepared together still pay, then refund, the checkout",
          arguments: Backend.allCases)
    func decidedWhenApplied(_ backend: Backend) async throws {
        try await CheckoutQuarantineTests.withScene(backend) { scene in
            let (id, reference) = try await scene.citconCheckout()
            let payment = try await scene.ipn(reference, id: "ch_pay")
            let refund = try #require(try await scene.fixture.citconIPN(reference: reference, id: "rf_pay", type: "refund", amount: "1999").first)
            // Both matched while the checkout is pending, as a batch prepared while the one before applies.
            let matchedPayment = try #require(try await scene.matcher.match(payment))
            let matchedRefund = try #require(try await scene.matcher.match(refund))
            var changes: [PurchaseChange] = []
            for matched in [matchedPayment, matchedRefund] {
                var change = try #require(Projector.change(for: matched.event))
                change.steps = [try #require(matched.step)]
                changes.append(change)
            }
            #expect(try await scene.store.apply([changes.removeFirst()], nowMs: Timestamp.now.millisecondsSince1970) == [.applied])
            #expect(try await scene.api.get(id).string("state") == "paid")
            #expect(try await scene.store.apply(changes, nowMs: Timestamp.now.millisecondsSince1970) == [.applied])
            #expect(try await scene.api.get(id).string("state") == "refunded")
            #expect(scene.metrics.total("tollgate_checkout_notifications_total", ["provider": "citcon", "outcome": "refunded"]) == 1)
        }
    }
}
