import Workers
