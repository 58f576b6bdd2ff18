import Glibc

/// Drives the gateway from one thread over a fixed set of keep-alive connections (epoll), writing
/// pre-serialized requests and timing each answer.
///
/// - Closed loop: every connection sends its next request as soon as the previous answer arrives,
///   until the time is up or the deliveries run out: the gateway's maximum throughput at that concurrency.
/// - Open loop: request `i` is due at `start + i / rate`, whatever the answers do; a due request
///   waits for a free connection if none is idle, and its latency counts from when it was due, so a
///   stalled gateway shows up in the percentiles instead of silently slowing the client down
///   (coordinated omission).
final class LoadDriver {
    enum Mode {
        case closed(seconds: Double)
        case open(perSecond: Double)
    }

    private let loop: EventLoop
    private let port: UInt16
    private var connections: [Connection] = []
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    // The run in progress.
    private var requests: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
    private var ends: [Int] = []
    private var outcome = RunOutcome()
    private var busy = 0
    private var next = 0
    private var closedDeadline: UInt64 = 0
    private var openStart: UInt64 = 0
    private var openInterval: Double = 0
    private var idle: [Int] = []
    private var backlog: [Int] = []
    private var backlogHead = 0

    init(port: UInt16, connections count: Int) throws {
        self.port = port
        loop = try EventLoop()
        for token in 0..<count {
            let fd = try Connection.open(port: port)
            try loop.add(fd: fd, token: UInt64(token))
            connections.append(Connection(fd: fd))
        }
    }

    deinit {
        for connection in connections { close(connection.fd) }
        readBuffer.deallocate()
    }

    /// Runs `arena`'s requests in `mode`; `sample` is called about every 200 ms (memory readings).
    func run(_ arena: RequestArena, mode: Mode, sample: () -> Void) throws -> RunOutcome {
        try arena.bytes.withUnsafeBytes { bytes in
            requests = bytes
            ends = arena.ends
            defer { requests = UnsafeRawBufferPointer(start: nil, count: 0) }
            return try drive(mode: mode, sample: sample)
        }
    }

    private func drive(mode: Mode, sample: () -> Void) throws -> RunOutcome {
        outcome = RunOutcome()
        outcome.latencies.reserveCapacity(ends.count)
        busy = 0
        next = 0
        idle = Array((0..<connections.count).reversed())
        backlog = []
        backlogHead = 0
        let cpuAtStart = Clock.threadCPU()
        var nextSample = Clock.now()
        var armedFor: UInt64 = 0
        outcome.start = Clock.now()

        switch mode {
        case .closed(let seconds):
            closedDeadline = outcome.start + UInt64(seconds * 1e9)
            openInterval = 0
            while next < ends.count, let connection = idle.popLast() {
                try send(connection, request: next, start: Clock.now())
                next += 1
            }
        case .open(let perSecond):
            openInterval = 1e9 / perSecond
            openStart = outcome.start + 2_000_000
        }
        let isOpen = if case .open = mode { true } else { false }
        // However the gateway behaves, the run ends: a request unanswered this long after the last
        // one was due (or the closed loop's end) counts as an error.
        let lastDue = isOpen ? due(ends.count) : closedDeadline
        let giveUp = lastDue + 30_000_000_000

        while true {
            let now = Clock.now()
            if isOpen {
                while next < ends.count, due(next) <= now {
                    if let connection = idle.popLast() { try send(connection, request: next, start: due(next)) } else { backlog.append(next) }
                    next += 1
                }
                outcome.maxBacklog = max(outcome.maxBacklog, backlog.count - backlogHead)
                if next < ends.count, armedFor != due(next) {
                    armedFor = due(next)
                    loop.armTimer(at: armedFor)
                }
            }
            let pending = backlog.count - backlogHead
            if busy == 0, pending == 0, next >= ends.count || (!isOpen && now >= closedDeadline) { break }
            if now > giveUp {
                for index in connections.indices where connections[index].busy {
                    outcome.record("no answer within 30 s of the run's end")
                    connections[index].busy = false
                    try reconnect(index)
                }
                for _ in 0..<pending { outcome.record("never sent: no connection became free") }
                break
            }
            if now >= nextSample {
                sample()
                nextSample = now + 200_000_000
            }
            try loop.wait(timeoutMs: 50) { event in try handle(event) }
        }
        if case .closed = mode { outcome.exhausted = next >= ends.count && outcome.end < closedDeadline }
        outcome.clientCPU = Clock.threadCPU() - cpuAtStart
        if outcome.end == 0 { outcome.end = Clock.now() }
        return outcome
    }

    private func due(_ index: Int) -> UInt64 { openStart + UInt64(Double(index) * openInterval) }

    private func handle(_ event: EventLoop.Event) throws {
        guard event.token != EventLoop.timerToken else { return }
        let index = Int(event.token)
        if event.writable { try writeMore(index) }
        if event.readable || event.failed { try readAnswers(index) }
    }

    private func send(_ index: Int, request: Int, start: UInt64) throws {
        connections[index].busy = true
        connections[index].request = request
        connections[index].written = 0
        connections[index].start = start
        busy += 1
        try writeMore(index)
    }

    private func writeMore(_ index: Int) throws {
        guard connections[index].busy else { return }
        let range = ends[connections[index].request] - requestLength(connections[index].request) + connections[index].written
            ..< ends[connections[index].request]
        if !range.isEmpty, let base = requests.baseAddress {
            let count = write(connections[index].fd, base + range.lowerBound, range.count)
            if count > 0 { connections[index].written += count }
            if count < 0, errno != EAGAIN, errno != EINTR {
                try lost(index, "write failed: errno \(errno)")
                return
            }
        }
        let pending = connections[index].written < requestLength(connections[index].request)
        if pending != connections[index].watchingWrites {
            connections[index].watchingWrites = pending
            try loop.watchWrites(fd: connections[index].fd, token: UInt64(index), pending)
        }
    }

    private func requestLength(_ request: Int) -> Int { ends[request] - (request == 0 ? 0 : ends[request - 1]) }

    private func readAnswers(_ index: Int) throws {
        let count = read(connections[index].fd, readBuffer.baseAddress, readBuffer.count)
        if count < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            try lost(index, "read failed: errno \(errno)")
            return
        }
        if count == 0 {
            try lost(index, "the gateway closed the connection")
            return
        }
        connections[index].parser.feed(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
        while true {
            let response: ResponseParser.Response?
            do { response = try connections[index].parser.next(keeping: outcome.firstError == nil ? 600 : 0) } catch {
                try lost(index, "an answer that is not HTTP/1.1")
                return
            }
            guard let response else { return }
            let now = Clock.now()
            guard connections[index].busy else {
                try lost(index, "an answer nobody asked for")
                return
            }
            outcome.answered += 1
            outcome.latencies.append(now - connections[index].start)
            outcome.end = max(outcome.end, now)
            if !(200..<300).contains(response.status) {
                outcome.statuses[response.status, default: 0] += 1
                outcome.record("HTTP \(response.status): " + String(decoding: response.bytes, as: UTF8.self))
            } else {
                outcome.statuses[response.status, default: 0] += 1
            }
            connections[index].busy = false
            busy -= 1
            if response.closes { try reconnect(index) }
            try proceed(index, now: now)
        }
    }

    /// What a connection does once free: the next request (closed loop, open-loop backlog) or wait.
    private func proceed(_ index: Int, now: UInt64) throws {
        if openInterval == 0 {
            if now < closedDeadline, next < ends.count {
                try send(index, request: next, start: now)
                next += 1
                return
            }
        } else if backlogHead < backlog.count {
            let request = backlog[backlogHead]
            backlogHead += 1
            try send(index, request: request, start: due(request))
            return
        }
        idle.append(index)
    }

    /// The connection failed: its request is an error, and a new connection takes its place.
    private func lost(_ index: Int, _ why: String) throws {
        if connections[index].busy {
            outcome.record(why)
            connections[index].busy = false
            busy -= 1
            try reconnect(index)
            try proceed(index, now: Clock.now())
        } else {
            try reconnect(index)
        }
    }

    private func reconnect(_ index: Int) throws {
        loop.remove(fd: connections[index].fd)
        close(connections[index].fd)
        let fd = try Connection.open(port: port)
        try loop.add(fd: fd, token: UInt64(index))
        connections[index] = Connection(fd: fd)
    }
}
