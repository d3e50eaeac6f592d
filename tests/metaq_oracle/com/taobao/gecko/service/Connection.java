package com.taobao.gecko.service;

/** Stand-in for gecko's network connection (FileMessageSet.write sends a slice over it; never called here). */
public interface Connection {
    void transferFrom(com.taobao.gecko.core.buffer.IoBuffer head, com.taobao.gecko.core.buffer.IoBuffer tail,
            java.nio.channels.FileChannel channel, long position, long size);

    java.net.InetSocketAddress getRemoteSocketAddress();
}
