/// Percentiles of a run's latencies, exact (every sample kept, sorted once at the end).
struct Latencies {
    let sorted: [UInt64]

    init(_ samples: [UInt64]) { sorted = samples.sorted() }

    /// The `fraction` quantile in milliseconds (nearest rank).
    func milliseconds(_ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[min(max(rank, 0), sorted.count - 1)]) / 1e6
    }

    var maxMilliseconds: Double { Double(sorted.last ?? 0) / 1e6 }
}
