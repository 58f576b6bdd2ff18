import CoreMetrics
import Metrics

extension MerchantMetrics {
    /// How one Play acknowledgement went (PlayAcknowledger.Outcome).
    func playAcknowledgement(_ outcome: PlayAcknowledger.Outcome) {
        Counter(label: "tollgate_worker_play_acknowledgements_total", dimensions: [("outcome", outcome.rawValue)], factory: factory).increment()
    }

    /// The acknowledgements waiting for the retry loop, and how long the oldest has waited.
    func playAcknowledgementsPending(_ count: Int, oldestAgeSeconds: Double) {
        Gauge(label: "tollgate_worker_play_acknowledgements_pending", factory: factory).record(count)
        Gauge(label: "tollgate_worker_play_acknowledgement_oldest_age_seconds", factory: factory).record(oldestAgeSeconds)
    }
}
