import CPostgres

extension PostgresConnection {
    /// Statements sent before their answers are read: bounded so that neither side's socket
    /// buffer fills while the other is not reading (libpq's blocking mode would deadlock).
    static let pipelineChunk = 256

    /// The statements in libpq's pipeline mode: sent back to back, answers read after each chunk.
    @discardableResult
    func executeBatch(_ statements: [SQLStatement]) throws(StoreError) -> [Int] {
        try checkNotAborted()
        // Prepared outside the pipeline, where failures are plain to report.
        let parameters = statements.map { PostgresParameters($0.params) }
        var names: [String] = []
        for (statement, params) in zip(statements, parameters) {
            guard let prepared = try preparedStatement(statement.sql, params) else { break }
            names.append(prepared.name)
        }
        guard statements.count > 1, names.count == statements.count else {
            // One statement, or the statement cache is full: one at a time.
            var counts: [Int] = []
            for statement in statements { counts.append(try execute(statement.sql, statement.params)) }
            return counts
        }
        guard PQenterPipelineMode(connection) == 1 else {
            throw StoreError(.invalid, "PostgreSQL: cannot enter pipeline mode: \(trimmed(PQerrorMessage(connection)))")
        }
        var counts: [Int] = []
        counts.reserveCapacity(statements.count)
        var failure: StoreError?
        for start in stride(from: 0, to: statements.count, by: Self.pipelineChunk) where failure == nil {
            var sent = 0
            for index in start..<min(start + Self.pipelineChunk, statements.count) {
                let params = parameters[index]
                guard PQsendQueryPrepared(connection, names[index], params.count, params.pointers, nil, nil, 0) == 1 else {
                    failure = StoreError.postgres(nil, connection)
                    break
                }
                sent += 1
            }
            if PQpipelineSync(connection) != 1, failure == nil { failure = StoreError.postgres(nil, connection) }
            for _ in 0..<sent {
                counts.append(readAnswer(&failure))
            }
            // The sync point's own result.
            while let result = PQgetResult(connection) {
                let isSync = PQresultStatus(result) == PGRES_PIPELINE_SYNC
                PQclear(result)
                if isSync { break }
            }
        }
        if PQexitPipelineMode(connection) != 1 {
            // Answers still pending: this connection cannot be trusted with another statement.
            abandon()
            failure = failure ?? StoreError(.unavailable, "PostgreSQL: cannot leave pipeline mode: \(trimmed(PQerrorMessage(connection)))")
        }
        if let failure { throw failure }
        return counts
    }

    /// One statement's answer: its changed-row count, or 0 after recording the first failure
    /// (statements after a failure come back as aborted).
    private func readAnswer(_ failure: inout StoreError?) -> Int {
        var count = 0
        while let result = PQgetResult(connection) {
            defer { PQclear(result) }
            guard PQresultStatus(result) != PGRES_PIPELINE_ABORTED else { continue }
            do {
                try check(result)
                count = Self.rowsChanged(result)
            } catch {
                if failure == nil { failure = error }
            }
        }
        return count
    }
}
