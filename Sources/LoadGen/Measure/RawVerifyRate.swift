import CLinux
import Glibc
import Toolkit
import Verifiers

/// The bare OpenSSL verify rates the gateway's figures are compared with: ES256 (P-256) and RS256
/// (2048 bits) through the same `PublicKey` calls the verifiers make, on the gateway's core while
/// the gateway is idle, best of a few rounds (the host is noisy).
enum RawVerifyRate {
    struct Rates: Codable {
        var es256PerSecond: Double
        var rs256PerSecond: Double
        var cpu: Int

        enum CodingKeys: String, CodingKey {
            case es256PerSecond = "es256_verify_per_sec", rs256PerSecond = "rs256_verify_per_sec", cpu
        }
    }

    static func measure(onCPU cpu: Int, rounds: Int = 3, seconds: Double = 1) throws -> Rates {
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJub3RpZmljYXRpb25UeXBlIjoiRElEX1JFTkVXIn0".utf8)
        let ec = try required(PrivateKey.generateP256(), "P-256 key")
        let rsa = try required(PrivateKey.generateRSA(bits: 2048), "RSA key")
        let ecPublic = try required(ec.publicKey, "P-256 public key"), rsaPublic = try required(rsa.publicKey, "RSA public key")
        let ecSignature = try required(ec.signES256(message), "ES256 signature")
        let rsaSignature = try required(rsa.signRSASHA256(message), "RS256 signature")
        let pinned = ThreadAffinity.pin(to: cpu)
        defer { if pinned { ThreadAffinity.restore() } }
        var es256 = 0.0, rs256 = 0.0
        for _ in 0..<rounds {
            es256 = max(es256, try rate(seconds) { ecPublic.verifyES256(message: message, signature: ecSignature) })
            rs256 = max(rs256, try rate(seconds) { rsaPublic.verifyRSASHA256(message: message, signature: rsaSignature) })
        }
        return Rates(es256PerSecond: es256.rounded(), rs256PerSecond: rs256.rounded(), cpu: cpu)
    }

    private static func rate(_ seconds: Double, _ verify: () -> Bool) throws -> Double {
        let start = Clock.now(), budget = UInt64(seconds * 1e9)
        var count = 0
        repeat {
            for _ in 0..<32 { guard verify() else { throw LoadGenError("a raw verify failed") } }
            count += 32
        } while Clock.now() - start < budget
        return Double(count) / (Double(Clock.now() - start) / 1e9)
    }
}

/// Moves the calling thread between cores: onto the client's core for timed runs, onto the
/// gateway's for the raw rates, and back to its original cores for signing traffic (the signing
/// threads inherit the mask of the thread that starts them).
enum ThreadAffinity {
    /// 1024 CPUs, glibc's cpu_set_t.
    private static let words = 16
    nonisolated(unsafe) private static var original: [UInt] = []

    static func pin(to cpu: Int) -> Bool {
        if original.isEmpty {
            var mask = [UInt](repeating: 0, count: words)
            if tollgate_get_thread_affinity(&mask, words * MemoryLayout<UInt>.size) > 0 { original = mask }
        }
        guard cpu >= 0, cpu < words * UInt.bitWidth else { return false }
        var mask = [UInt](repeating: 0, count: words)
        mask[cpu / UInt.bitWidth] = 1 << UInt(cpu % UInt.bitWidth)
        return tollgate_set_thread_affinity(mask, words * MemoryLayout<UInt>.size) == 0
    }

    static func restore() {
        if !original.isEmpty { _ = tollgate_set_thread_affinity(original, words * MemoryLayout<UInt>.size) }
    }
}
