import HTTPTypes
import Logging
import NIOCore
import Rejections
import ServiceHost
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import Verifiers

/// Guards one HTTP/1 connection where Hummingbird's own handling is bare or missing:
/// - a request head must arrive within `headerTimeout` of its first byte (slow-loris clients), else
///   408 `request_timeout`; Hummingbird's idle timer alone waits for whole request parts;
/// - a body must arrive within `bodyTimeout` of its head: the route's body read then fails with
///   `RequestBodyTimeout` and the route answers 408 `body_timeout`;
/// - a head the parser refuses gets JSON 431 `headers_too_large` or 400 `malformed_request`, counted,
///   instead of Hummingbird's bare 400;
/// - a response that says `Connection: close` closes the connection (Hummingbird would read on).
/// It sits after Hummingbird's HTTP/1 codec; the `RequestStartSniffer` it puts before the decoder
/// reports the bytes. Everything runs on the channel's event loop, with at most one timer per
/// connection that re-arms itself lazily, so busy keep-alive connections schedule rarely.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    struct Settings: Sendable {
        var headerTimeout: TimeAmount
        var bodyTimeout: TimeAmount
        /// For the `source` label of what it refuses.
        var routes: WebhookRoutes
        /// How long a closing connection still drains what the client sends after the answer, so the
        /// answer is not lost to a reset of unread data.
        var linger: TimeAmount = .seconds(2)
        /// How long the route has to answer once its body read failed with `RequestBodyTimeout`.
        var answerGrace: TimeAmount = .seconds(5)
    }

    private enum Phase {
        /// Waiting for a request; the idle timeout governs.
        case idle
        /// The first byte of a head arrived; the head is not decoded yet.
        case head(since: NIODeadline)
        /// The head was passed on; its end has not arrived.
        case body
        /// Answered or given up: inbound bytes are dropped, the connection closes soon.
        case closing
    }

    private let settings: Settings
    private let metrics: GatewayMetrics
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var phase = Phase.idle
    /// When the current phase runs out; nil when nothing is timed.
    private var deadline: NIODeadline?
    private var timer: Scheduled<Void>?
    private var timerFires: NIODeadline?
    /// Requests passed on whose response has not ended; while any is open the guard does not answer itself.
    private var openResponses = 0
    private var closeAfterResponse = false
    private var target = RequestTargetCapture()

    init(settings: Settings, metrics: GatewayMetrics, logger: Logger) {
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        do {
            let decoder = try context.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try context.pipeline.syncOperations.addHandler(RequestStartSniffer(owner: self), position: .before(decoder))
        } catch {
            // Only head deadlines are lost; the idle timeout still ends a silent connection.
            logger.warning("no request head deadline on this connection", metadata: ["error": .string("\(error)")])
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        phase = .closing
        deadline = nil
        context.fireChannelInactive()
    }

    /// From the sniffer, before the decoder sees the bytes; false drops them.
    func bytesArrived(_ buffer: ByteBuffer) -> Bool {
        switch phase {
        case .closing:
            return false
        case .idle:
            // Blank lines before a request are allowed (RFC 9112 section 2.2) and start nothing.
            let bytes = buffer.readableBytesView
            guard let first = bytes.firstIndex(where: { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }) else { return true }
            let now = NIODeadline.now()
            phase = .head(since: now)
            target.reset()
            target.append(bytes[first...])
            arm(now + settings.headerTimeout)
        case .head:
            target.append(buffer.readableBytesView)
        case .body:
            break
        }
        return true
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), phase) {
        case (_, .closing):
            return
        case (.head, _):
            openResponses += 1
            phase = .body
            arm(.now() + settings.bodyTimeout)
        case (.end, .body):
            phase = .idle
            deadline = nil
        case (.body, _), (.end, _):
            break
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch phase {
        case .closing:
            // What the decoder says about bytes after the guard gave up (or after the answer) adds nothing.
            return
        case .idle, .head:
            if openResponses == 0, context.channel.isActive, let rejection = Self.rejection(for: error) {
                answer(rejection, context: context)
                return
            }
        case .body:
            break
        }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response):
            if closeAfterResponse {
                response.headerFields[.connection] = "close"
                context.write(wrapOutboundOut(.head(response)), promise: promise)
                return
            }
            if response.headerFields[values: .connection].contains(where: { $0.lowercased().contains("close") }) {
                closeAfterResponse = true
            }
        case .body:
            break
        case .end:
            openResponses = max(0, openResponses - 1)
            if closeAfterResponse, openResponses == 0 {
                let written = context.eventLoop.makePromise(of: Void.self)
                if let promise { written.futureResult.cascade(to: promise) }
                context.write(data, promise: written)
                context.flush()
                written.futureResult.assumeIsolated().whenComplete { _ in self.closeOutput(context) }
                return
            }
        }
        context.write(data, promise: promise)
    }

    /// The answer to a head the decoder refused; nil for errors that are not about the request (I/O).
    static func rejection(for error: any Error) -> Rejection? {
        switch error {
        case HTTPParserError.headerOverflow:
            Rejection(.headersTooLarge, "the request line and header fields are larger or more numerous than this gateway accepts")
        case let error as HTTPParserError:
            Rejection(.malformedRequest, "the request head is not valid HTTP/1.1 (\(error))")
        case is HTTP1TypeConversionError:
            Rejection(.malformedRequest, "the request head is not valid HTTP (method or target)")
        default:
            nil
        }
    }

    // MARK: Deadlines

    /// Sets the current deadline; a pending timer that fires earlier re-arms itself for it then.
    private func arm(_ newDeadline: NIODeadline) {
        deadline = newDeadline
        if let fires = timerFires, fires <= newDeadline { return }
        timer?.cancel()
        schedule(at: newDeadline)
    }

    private func schedule(at when: NIODeadline) {
        guard let context else { return }
        timerFires = when
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: when) { self.timerFired() }
    }

    private func timerFired() {
        timer = nil
        timerFires = nil
        guard let deadline, let context else { return }
        if NIODeadline.now() < deadline {
            schedule(at: deadline)
            return
        }
        self.deadline = nil
        expire(context)
    }

    private func expire(_ context: ChannelHandlerContext) {
        switch phase {
        case .idle:
            break
        case .head:
            if openResponses == 0, context.channel.isActive {
                answer(Rejection(.requestTimeout, "the request head did not arrive within \(settings.headerTimeout.nanoseconds / 1_000_000) ms of its first byte"),
                       context: context)
            } else {
                // A pipelined head behind an unanswered request: no answer can be put before that one's.
                context.close(promise: nil)
            }
        case .body:
            if openResponses > 0 {
                // The route reads the body (or answers without it): its read fails and it answers 408.
                closeAfterResponse = true
                phase = .closing
                arm(.now() + settings.answerGrace)
                context.fireErrorCaught(RequestBodyTimeout(milliseconds: settings.bodyTimeout.nanoseconds / 1_000_000))
            } else {
                // Answered already (an early refusal) while the rest of the body was being read to its end.
                context.close(promise: nil)
            }
        case .closing:
            context.close(promise: nil)
        }
    }

    // MARK: Answers and closing

    /// Writes a JSON refusal for a request no route saw, counts it like every rejection, and closes.
    private func answer(_ rejection: Rejection, context: ChannelHandlerContext) {
        let source = settings.routes.sourceLabel(path: target.path ?? "")
        let status = rejection.httpStatus
        metrics.rejection(source: source, reason: rejection.code)
        if case .head(let since) = phase {
            metrics.request(route: "unmatched", status: status, duration: .nanoseconds((NIODeadline.now() - since).nanoseconds))
        } else {
            metrics.request(route: "unmatched", status: status, duration: .zero)
        }
        logger.notice("request refused", metadata: [
            "source": .string(source), "reason": .string(rejection.code), "detail": .string(rejection.message)])
        phase = .closing
        arm(.now() + settings.linger)
        let body = ByteBuffer(bytes: rejection.jsonBody)
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.readableBytes)
        fields[.connection] = "close"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .init(code: status), headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in self.closeOutput(context) }
    }

    /// Ends the answer with a FIN, then keeps reading (and dropping) for `linger` before closing, so
    /// a client still sending does not get a reset that could destroy the answer before it is read.
    private func closeOutput(_ context: ChannelHandlerContext) {
        phase = .closing
        context.close(mode: .output, promise: nil)
        arm(.now() + settings.linger)
    }
}
