import Rejections
@testable import Verifiers


extension WebhookSource {
    /// The reason code of a refusal, or nil when accepted.
    func reason(_ request: WebhookRequest) async -> (any ReasonCode)? {
        await rejection(request)?.reason
    }

    /// The refusal, or nil when accepted.
    func rejection(_ request: WebhookRequest) async -> Rejection? {
        do { _ = try await handle(request); return nil } catch { return error }
    }
}
