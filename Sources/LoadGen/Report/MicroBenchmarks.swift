import Foundation

/// `tollgate-load report`: adds the per-core micro-benchmarks (`tollgate-bench`'s verifiers.json,
/// projection.json and webhooks.json, measured after the load runs in the same `make bench`) to the load
/// results, so one file holds the whole run.
enum MicroBenchmarks {
    static func merge(results path: String, verifiers: String?, projection: String?, webhooks: String? = nil) throws {
        let url = URL(fileURLWithPath: path)
        guard var document = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] else {
            throw LoadGenError("\(path) is not a JSON object")
        }
        var micro: [String: Any] = [:]
        for (key, file) in [("verifiers", verifiers), ("projection", projection), ("webhooks", webhooks)] {
            guard let file else { continue }
            micro[key] = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file)))
        }
        document["micro_benchmarks"] = micro
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try (data + Data("\n".utf8)).write(to: url)
        if let verifiers = micro["verifiers"] as? [String: Any] {
            let es256 = verifiers["raw_es256_verify_per_sec"] ?? "?"
            let rs256 = (verifiers["google"] as? [String: Any])?["raw_rs256_verify_per_sec"] ?? "?"
            print("micro-benchmarks (tollgate-bench, same run, gateway stopped): raw ES256 \(es256)/s, RS256 \(rs256)/s; written into \(path)")
        }
    }
}
