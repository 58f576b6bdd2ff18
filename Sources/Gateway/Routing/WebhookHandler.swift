import Events
import Foundation
import HTTPTypes
import Hummingbird
import Kafka
import Logging
import NIOCore
import Rejections
import ServiceHost
import Toolkit
import Verifiers

/// `POST /webhooks/<source>`: read the body within the limit, verify and normalize through the
/// sender's `WebhookSource`, make it durable (`DeliveryWriter`: Kafka, else the spool), then answer 2xx.
struct WebhookHandler: Sendable {
    let name: SourceName
    let source: any WebhookSource
    let writer: DeliveryWriter
    let metrics: GatewayMetrics
    let maxBodyBytes: Int
    let publicPathPrefix: String
    let logger: Logger
    let admission: SourceAdmission

    func handle(_ request: Request) async -> Response {
        // Before the body is read; released on every way out.
        let ticket = admission.admit()
        defer { ticket.release() }
        if let refusal = ticket.refusal { return refusal }
        do {
            return try await accept(request)
        } catch {
            metrics.rejection(source: name.rawValue, reason: error.code)
            var headers = HTTPFields()
            if error.httpStatus == 503, error.retryAfterSeconds == nil { headers[.retryAfter] = "5" }
            // The rest of an oversize body is not worth reading: end the connection.
            if error.is(CommonReason.bodyTooLarge) { headers[.connection] = "close" }
            logger.notice("delivery rejected", metadata: [
                "source": .string(name.rawValue), "reason": .string(error.code), "detail": .string(error.message)])
            return error.response(extraHeaders: headers)
        }
    }

    private func accept(_ request: Request) async throws(Rejection) -> Response {
        let body = try await RequestBodyReader.read(request, maxBytes: maxBodyBytes)
        let received = Timestamp.now
        var headers = HeaderFields()
        for field in request.headers { headers.append(name: field.name.canonicalName, value: field.value) }
        let webhookRequest = WebhookRequest(path: publicPathPrefix + request.uri.path, headers: headers,
                                            body: body, receivedAt: received)
        let delivery = try await source.handle(webhookRequest)
        // Only a delivery that verified spends the sender's rate budget.
        if let refusal = admission.chargeVerified() { return refusal }
        let outcome = try await writer.write(delivery, source: name, request: webhookRequest)
        metrics.written(source: name.rawValue, outcome: outcome.rawValue)
        if outcome == .duplicate {
            logger.info("delivery already accepted", metadata: [
                "source": .string(name.rawValue), "ce_id": .string(delivery.events.first?.id ?? "")])
            return response(delivery)
        }
        metrics.accepted(source: name.rawValue, eventTypes: delivery.events.map(\.type.rawValue))
        // Not for a redelivery just answered above: a captured delivery sent again and again must not
        // keep the silence alarm quiet while the sender itself is down.
        metrics.delivered(source: name.rawValue, app: delivery.events.first?.app ?? "",
                          atSeconds: Double(received.millisecondsSince1970) / 1000)
        if let quarantine = delivery.quarantine {
            metrics.quarantined(source: name.rawValue, reason: quarantine.reason)
            logger.warning("delivery quarantined", metadata: [
                "source": .string(name.rawValue), "reason": .string(quarantine.reason), "detail": .string(quarantine.message),
                "delivery": .string(delivery.rawKey)])
        } else {
            logger.info("delivery accepted", metadata: [
                "source": .string(name.rawValue), "events": .stringConvertible(delivery.events.count),
                "ce_id": .string(delivery.events.first?.id ?? ""), "via": .string(outcome.rawValue)])
        }
        return response(delivery)
    }

    /// The sender's own 2xx answer.
    private func response(_ delivery: AcceptedDelivery) -> Response {
        var responseHeaders = HTTPFields()
        if let contentType = delivery.response.contentType { responseHeaders[.contentType] = contentType }
        for header in delivery.response.headers {
            // Names come from the sender's code, never from the request; an invalid one is a programming error.
            guard let fieldName = HTTPField.Name(header.name) else {
                logger.error("invalid response header name", metadata: ["source": .string(name.rawValue), "header": .string(header.name)])
                continue
            }
            responseHeaders.append(HTTPField(name: fieldName, value: header.value))
        }
        return Response(status: HTTPResponse.Status(code: delivery.response.status), headers: responseHeaders,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: delivery.response.body)))
    }

}
