pipe.frobnicate @w
