// An integer that does not fit in 64 bits.
pipe.schedule @s placement @p kind "gpipe" microbatches 99999999999999999999999999 {
}
