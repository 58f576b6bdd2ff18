import Events
import FuzzSupport
@testable import Verifiers
@testable import Toolkit

/// The program's entry (main.swift). Converting `fuzzPubSub` to a C pointer here, not in main.swift,
/// keeps its `@_cdecl` symbol in one object file, which debug (per-file) builds need.
func runFuzzer() -> Never { FuzzDriver.run(fuzzPubSub) }

/// The Pub/Sub push envelope and the Play RTDN inside it, as `GoogleSource` reads them once the push's
/// token is verified: wrapped (the JSON envelope) and unwrapped (the body is the data, metadata in
/// headers). Beyond not crashing: an accepted envelope has a message id, a decoded RTDN has a package
/// and normalizes into an event keyed by its subscription and message id whose JSON our own parser reads back.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPubSub(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let body = FuzzCheck.bytes(data, size)
    let at = Timestamp(millisecondsSince1970: 1_700_000_000_000)
    let wrapped = WebhookRequest(path: "/webhooks/google", headers: HeaderFields(), body: body, receivedAt: at)
    let unwrapped = WebhookRequest(path: "/webhooks/google", headers: HeaderFields([(PubSubPush.messageIdHeader, "unwrapped-1"),
                                                                 (PubSubPush.subscriptionHeader, "projects/p/subscriptions/s")]),
                                   body: body, receivedAt: at)
    for request in [wrapped, unwrapped] {
        guard let push = try? PubSubPush(request) else { continue }
        FuzzCheck.require(!push.messageId.isEmpty, "accepted an empty message id")
        guard let data = push.data, let notification = try? DeveloperNotification(data: data) else { continue }
        FuzzCheck.require(!notification.packageName.isEmpty, "accepted an RTDN without packageName")
        FuzzCheck.require(!push.subscription.isEmpty, "accepted an empty subscription")
        let event = GoogleNormalizer(notification: notification, messageId: push.messageId, subscription: push.subscription,
                                     receivedAt: at).event()
        FuzzCheck.require(event.id == "google:\(EventIdScope.component(push.subscription)):\(push.messageId)",
                          "event id \(event.id) is not the subscription and message id")
        FuzzEvents.check(event)
    }
    return 0
}
