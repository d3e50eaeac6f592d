package com.taobao.metamorphosis.network;

/** Stand-in for the put request: the data, checksum (-1 = none) and flag that makeMessageBuffer reads. */
public class PutCommand {
    private final byte[] data;
    private final int flag;
    private final int checkSum;

    public PutCommand(byte[] data, int flag, int checkSum) {
        this.data = data;
        this.flag = flag;
        this.checkSum = checkSum;
    }

    public byte[] getData() { return data; }

    public int getFlag() { return flag; }

    public int getCheckSum() { return checkSum; }
}
