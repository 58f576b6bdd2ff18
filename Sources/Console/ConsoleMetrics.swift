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

    /// A metrics source that did not answer the overview's sampling (`gateway-1`..., `local`).
    func metricsReadFailed(source: String) {
        Counter(label: "tollgate_console_metrics_read_failures_total", dimensions: [("source", source)], factory: factory).increment()
    }

    /// History, raw-delivery index and store call rows pruned after `console.historyDays`.
    func historyPruned(_ count: Int) {
        Counter(label: "tollgate_console_history_pruned_total", factory: factory).increment(by: count)
    }

    /// An action taken, by action and outcome (done, refused, failed).
    func action(_ action: String, outcome: String) {
        Counter(label: "tollgate_console_actions_total", dimensions: [("action", action), ("outcome", outcome)], factory: factory).increment()
    }

    /// An audit record kept in the store but not published to the audit topic.
    func auditPublishFailed() {
        Counter(label: "tollgate_console_audit_publish_failures_total", factory: factory).increment()
    }

    public static let families: [MetricFamily] = [
        MetricFamily("tollgate_console_actions_total", .counter, labels: ["action", "outcome"],
                     help: "Operator console actions, by action and outcome (done, refused, failed)."),
        MetricFamily("tollgate_console_audit_publish_failures_total", .counter,
                     help: "Console audit records kept in the store but not published to the audit topic."),
        MetricFamily("tollgate_console_rejections_total", .counter, labels: ["reason"],
                     help: "Operator console requests refused, by reason code (docs/console.md)."),
        MetricFamily("tollgate_console_sign_ins_total", .counter, labels: ["outcome"],
                     help: "Operator console sign-ins, by outcome (signed_in, refused)."),
        MetricFamily("tollgate_console_metrics_read_failures_total", .counter, labels: ["source"],
                     help: "Metrics sources (console.gatewayMetrics: gateway-1...; local) that did not answer the console's sampling."),
        MetricFamily("tollgate_console_history_pruned_total", .counter,
                     help: "Purchase history, raw delivery index and store call rows deleted after console.historyDays."),
    ]
}
