import NIOCore

/// Sits before the HTTP decoder and shows each read to its `ConnectionGuard`, which starts a head's
/// deadline at its first byte (no decoded part says when that was). Once the guard is closing the
/// connection it drops what arrives, so nothing more is parsed.
final class RequestStartSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let owner: ConnectionGuard

    init(owner: ConnectionGuard) {
        self.owner = owner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard owner.bytesArrived(unwrapInboundIn(data)) else { return }
        context.fireChannelRead(data)
    }
}
