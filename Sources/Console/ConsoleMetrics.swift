import CoreMetrics
import Metrics
import Toolkit

/// The console's metrics. The factory is injected so several workers in one process (tests) keep separate counts.
public struct ConsoleMetrics: Sendable {
    let factory: any MetricsFactory

    public init(factory: any MetricsFactory = MetricsSystem.factory) { self.factory = factory }

    /// A console request refused, by reason code.
    func rejected(reason: String) {
        Counter(label: "tollgate_console_rejections_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    /// A sign-in, by outcome (signed_in, refused).
    func signIn(outcome: String) {
        Counter(label: "tollgate_console_sign_ins_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// History rows pruned after `console.historyDays`.
    func historyPruned(_ count: Int) {
        Counter(label: "tollgate_console_history_pruned_total", factory: factory).increment(by: count)
    }

    public static let families: [MetricFamily] = [
        MetricFamily("tollgate_console_rejections_total", .counter, labels: ["reason"],
                     help: "Operator console requests refused, by reason code (docs/console.md)."),
        MetricFamily("tollgate_console_sign_ins_total", .counter, labels: ["outcome"],
                     help: "Operator console sign-ins, by outcome (signed_in, refused)."),
        MetricFamily("tollgate_console_history_pruned_total", .counter,
                     help: "Purchase history rows deleted after console.historyDays."),
    ]
}
