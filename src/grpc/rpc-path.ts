/** An RPC path, `/package.Service/Method`: no REST path has this shape. */
export const rpcPath = /^\/[A-Za-z_]\w*(\.[A-Za-z_]\w*)+\/[A-Za-z_]\w*$/;
