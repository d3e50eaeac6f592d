package com.taobao.gecko.core.util;

/** Stand-in for gecko: only used for a transfer log line. */
public class RemotingUtils {
    public static String getAddrString(java.net.SocketAddress address) { return String.valueOf(address); }
}
