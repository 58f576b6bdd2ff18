import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive lock on `<spool>.lock`, held for the spool's life: two gateways draining one spool
/// would publish its records twice. The kernel drops it when the process dies, even by `kill -9`.
final class SpoolLock: Sendable {
    private let descriptor: Int32

    init(path: String) throws(SpoolError) {
        let lockPath = path + ".lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SpoolError(.unavailable, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw SpoolError(.unavailable, "\(path) is in use by another tollgate process (\(lockPath) is locked); give each gateway its own spool.path")
        }
        self.descriptor = descriptor
    }

    func release() {
        _ = flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
