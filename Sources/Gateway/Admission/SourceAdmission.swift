import Config
import Events
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import Rejections
import ServiceHost
import Toolkit
import Verifiers

/// Admission of one sender's webhook requests, decided before the body is read so a flood cannot
/// make the gateway buffer bodies: first the sender's rate (429 `rate_limited`), then a slot among
/// all senders' and among this sender's requests in flight (503 `overloaded`). It never waits or
/// queues, and costs an atomic or two and, with a rate, one short lock.
///
/// The rate is a budget for authentic deliveries only: before the body it is only looked at (an
/// empty bucket refuses), and a token is taken once the delivery verified (`chargeVerified`).
/// Requests that fail verification take none, so a flood of unauthenticated requests on a sender's
/// route cannot spend that sender's allowance and lock its real deliveries out (docs/durability.md).
final class SourceAdmission: Sendable {
    let source: SourceName
    private let allSenders: InFlightLimiter
    private let thisSender: InFlightLimiter
    private let rate: RateLimiter?
    private let gauge: Meter
    private let metrics: GatewayMetrics
    private let refusals: RefusalLog

    /// `allSenders` is shared by every sender's admission.
    init(source: SourceName, allSenders: InFlightLimiter, limits: LimitSettings, metrics: GatewayMetrics, logger: Logger) {
        self.source = source
        self.allSenders = allSenders
        thisSender = InFlightLimiter(limit: limits.maxInFlightPerSource)
        rate = limits.rates[source].map { RateLimiter(perSecond: $0.perSecond, burst: $0.burst) }
        gauge = metrics.inFlightGauge(source: source.rawValue)
        self.metrics = metrics
        refusals = RefusalLog(source: source.rawValue, logger: logger)
    }

    /// Admits the request or says what to answer instead; the refusal is already counted and logged.
    func admit() -> AdmissionTicket {
        if let retryAfter = rate?.check() { return rateLimited(retryAfter: retryAfter) }
        guard allSenders.tryAcquire() else {
            return refuse(Rejection(.overloaded, "\(allSenders.limit) requests are being handled already; retry later"), retryAfter: 1)
        }
        guard thisSender.tryAcquire() else {
            allSenders.release()
            return refuse(Rejection(.overloaded, "\(thisSender.limit) \(source.rawValue) requests are being handled already; retry later"),
                          retryAfter: 1)
        }
        gauge.increment()
        return AdmissionTicket(admitted: self, refusal: nil)
    }

    /// Takes the rate token of a delivery that verified; the answer to send instead when the budget
    /// ran out meanwhile (other authentic deliveries took it while this one was read and verified).
    func chargeVerified() -> Response? {
        guard let retryAfter = rate?.take() else { return nil }
        return rateLimited(retryAfter: retryAfter).refusal
    }

    private func rateLimited(retryAfter: Int) -> AdmissionTicket {
        refuse(Rejection(.rateLimited, "\(source.rawValue) is limited to \(Self.format(rate?.perSecond)) authentic deliveries a second"),
               retryAfter: retryAfter)
    }

    fileprivate func release() {
        gauge.decrement()
        thisSender.release()
        allSenders.release()
    }

    private func refuse(_ rejection: Rejection, retryAfter: Int) -> AdmissionTicket {
        metrics.rejection(source: source.rawValue, reason: rejection.code)
        refusals.record(rejection)
        var refusal = rejection
        refusal.retryAfterSeconds = retryAfter
        return AdmissionTicket(admitted: nil, refusal: refusal.response())
    }

    private static func format(_ perSecond: Double?) -> String {
        guard let perSecond else { return "?" }
        return perSecond == perSecond.rounded() ? String(Int(perSecond)) : String(perSecond)
    }
}

/// What `SourceAdmission.admit()` decided. Release it once the request is answered (`defer`),
/// whether it was admitted or not.
struct AdmissionTicket {
    fileprivate let admitted: SourceAdmission?
    /// The answer to send instead of handling the request.
    let refusal: Response?

    func release() {
        admitted?.release()
    }
}
